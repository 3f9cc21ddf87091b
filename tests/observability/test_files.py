"""The example stack's files hold together: dashboard structure, Collector, compose, provisioning.

Docker and an OpenTelemetry Collector binary are not available where these tests run, so the
compose file and Collector configs are checked for structure and for agreeing with each other
(every referenced component defined, every mounted file present, ports and hosts matching).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundwire import semconv
from tests.observability.conftest import DASHBOARD, EXAMPLE, RULES, load_dashboard, panels

GRAFANA_BUILTINS = {"__rate_interval", "__range", "__interval", "__from", "__to", "__all"}
_VARIABLE = re.compile(r"\$\{([\w.]+)(?::\w+)?\}|\$(\w+)")
_METRIC = re.compile(r"\bgroundwire_\w+(?=\s*[{\[])")
"""A metric name: followed by a selector or a range (label names are followed by neither)."""


def _yaml(relative: str) -> Any:
    return yaml.safe_load((EXAMPLE / relative).read_text())


def _variables_in(text: str) -> set[str]:
    names = {braced or bare for braced, bare in _VARIABLE.findall(text)}
    return {n for n in names if n not in GRAFANA_BUILTINS and not n.startswith("__field.")}


def _exported_names() -> set[str]:
    """Prometheus names of groundwire's metrics, derived from semconv like the exporter does."""

    def flat(name: str) -> str:
        return name.replace(".", "_")

    histograms = {
        flat(semconv.METRIC_EVALUATION_SCORE),
        flat(semconv.METRIC_EVALUATION_DURATION) + "_seconds",
        flat(semconv.METRIC_JUDGE_AGREEMENT),
    }
    names = {f"{h}_{part}" for h in histograms for part in ("bucket", "sum", "count")}
    names |= {
        flat(semconv.METRIC_EVALUATIONS) + "_total",
        flat(semconv.METRIC_JUDGE_TOKENS) + "_total",
    }
    names |= {flat(semconv.METRIC_GATEWAY_SCORING_LAG) + f"_seconds_{part}"
              for part in ("bucket", "sum", "count")}  # fmt: skip
    names |= {
        flat(name) + "_total"
        for name in (
            semconv.METRIC_GATEWAY_RECEIVED,
            semconv.METRIC_GATEWAY_FORWARDED,
            semconv.METRIC_GATEWAY_DROPPED,
            semconv.METRIC_GATEWAY_REFUSED,
        )
    }
    names |= {
        flat(semconv.METRIC_GATEWAY_QUEUE_BYTES),  # unit By: already ends in "bytes"
        flat(semconv.METRIC_GATEWAY_QUEUE_CAPACITY) + "_bytes",
        flat(semconv.METRIC_GATEWAY_OPEN_TRACES),
    }
    return names | {flat(semconv.METRIC_QUEUE_SIZE)}


# --- dashboard ------------------------------------------------------------------------------------


def test_dashboard_panels_each_have_a_datasource_and_a_query() -> None:
    """Every data panel and target uses the DS_PROMETHEUS variable (logs panels DS_LOKI) and has
    a PromQL (LogQL) expression."""
    dashboard = load_dashboard()
    found = panels(dashboard)
    assert len(found) >= 12
    for item in found:
        if item["type"] == "logs":
            assert item["datasource"] == {"type": "loki", "uid": "${DS_LOKI}"}, item["title"]
            assert all(t["datasource"] == item["datasource"] for t in item["targets"])
            continue
        assert item["datasource"] == {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}, item[
            "title"
        ]
        assert item["targets"], f"panel {item['title']!r} has no query"
        for target in item["targets"]:
            assert target["datasource"]["uid"] == "${DS_PROMETHEUS}", item["title"]
            assert target["expr"].strip(), f"panel {item['title']!r} has an empty query"
    ids = [item["id"] for item in dashboard["panels"]]
    assert len(ids) == len(set(ids)), "panel ids must be unique"


def test_dashboard_variables_are_all_defined_in_order() -> None:
    """Each `$var` in queries, titles and links is defined; a variable uses only earlier ones."""
    dashboard = load_dashboard()
    defined: list[str] = []
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        text = json.dumps(query) if isinstance(query, dict) else str(query or "")
        undefined = _variables_in(text) - set(defined)
        assert not undefined, f"variable {variable['name']} uses {undefined} before they exist"
        defined.append(variable["name"])
    assert len(defined) == len(set(defined))
    used = _variables_in(json.dumps(dashboard["panels"])) | _variables_in(
        json.dumps(dashboard["links"])
    )
    assert used <= set(defined), f"undefined variables: {used - set(defined)}"
    assert {"service", "evaluator", "model", "threshold", "DS_PROMETHEUS"} <= used


def test_dashboard_datasource_and_filter_variables() -> None:
    """Datasource variables for Prometheus and Tempo; service, evaluator, model are multi-select."""
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    assert variables["DS_TEMPO"]["query"] == "tempo"
    for name in ("service", "evaluator", "model"):
        variable = variables[name]
        assert variable["type"] == "query" and variable["multi"] and variable["includeAll"]
        assert variable["allValue"] == ".*"
        assert variable["datasource"]["uid"] == "${DS_PROMETHEUS}"
        assert variable["query"]["query"].startswith("label_values(groundwire_evaluations_total")
    thresholds = [o["value"] for o in variables["threshold"]["options"]]
    bounds = {repr(b) for b in semconv.SCORE_BUCKETS}
    assert thresholds and set(thresholds) <= bounds, "a threshold must be a score bucket bound"
    assert variables["threshold"]["current"]["value"] in thresholds


def test_dashboard_filters_every_groundwire_query_by_service() -> None:
    """Each query filters by `$service`; each per-evaluator query also by evaluator and model."""
    for item in panels(load_dashboard()):
        for target in item["targets"]:
            expr = target["expr"]
            for selector in re.findall(r"groundwire_\w+\{([^}]*)\}", expr):
                assert 'job=~"$service"' in selector, (item["title"], selector)
                if "queue_size" not in expr and "groundwire_gateway_" not in expr:
                    assert 'gen_ai_evaluation_name=~"$evaluator"' in selector, item["title"]
                    assert 'gen_ai_request_model=~"$model"' in selector, item["title"]


def test_dashboard_and_rules_use_only_exported_metric_names() -> None:
    """Every `groundwire_*` name in PromQL is one the Prometheus exporter really produces."""
    exported = _exported_names()
    exprs = [t["expr"] for item in panels(load_dashboard()) for t in item["targets"]]
    exprs += [r["expr"] for g in yaml.safe_load(RULES.read_text())["groups"] for r in g["rules"]]
    used = {name for expr in exprs for name in _METRIC.findall(expr)}
    assert used <= exported, used - exported
    assert {"groundwire_evaluations_total", "groundwire_judge_tokens_total"} <= used


def _links(title: str) -> list[dict[str, Any]]:
    (item,) = [p for p in panels(load_dashboard()) if p["title"] == title]
    links: list[dict[str, Any]] = item["fieldConfig"]["defaults"]["links"]
    return links


def test_data_links_only_use_labels_every_query_of_their_panel_keeps() -> None:
    """A link's `${__field.labels.x}` is a legend label of each query of its (non-table) panel."""
    linked = 0
    for item in panels(load_dashboard()):
        links = item["fieldConfig"]["defaults"].get("links", [])
        used = set(re.findall(r"__field\.labels\.(\w+)", json.dumps(links)))
        if not links:
            continue
        linked += 1
        assert item["type"] != "table", item["title"]
        for target in item["targets"]:
            legend = set(re.findall(r"\{\{\s*(\w+)\s*\}\}", target["legendFormat"]))
            assert used <= legend, (item["title"], target["refId"], used - legend)
    assert linked >= 6


def test_verdict_panel_links_to_jaeger_search_for_those_turns() -> None:
    """The verdicts panel links to a Jaeger search of evaluation spans by evaluator and label."""
    jaeger = _links("Verdicts in range (score labels)")[0]["url"]
    base, _, query = jaeger.partition("?")
    assert base == "${jaeger_url}/search"
    params = dict(urllib.parse.parse_qsl(query))
    assert params["service"] == "${__field.labels.job}"
    assert params["operation"] == semconv.EVALUATION_SPAN_NAME
    assert json.loads(params["tags"]) == {
        semconv.GEN_AI_EVALUATION_NAME: "${__field.labels.gen_ai_evaluation_name}",
        semconv.GEN_AI_EVALUATION_SCORE_LABEL: "${__field.labels.gen_ai_evaluation_score_label}",
    }
    assert (params["start"], params["end"]) == ("${__from}000", "${__to}000")  # microseconds


def test_score_panels_link_to_low_scoring_turns_in_tempo() -> None:
    """Score panels link to Grafana Explore on Tempo with a TraceQL query on the result event."""
    tempo = _links("Score percentiles per evaluator")[1]["url"]
    assert tempo.startswith("/explore?left=")
    left = json.loads(urllib.parse.unquote(tempo.removeprefix("/explore?left=")))
    assert left["datasource"] == "${DS_TEMPO}"
    traceql = left["queries"][0]["query"]
    assert f"event.{semconv.GEN_AI_EVALUATION_NAME} = " in traceql
    assert f"event.{semconv.GEN_AI_EVALUATION_SCORE_VALUE} <= ${{threshold}}" in traceql


# --- Collector ------------------------------------------------------------------------------------

COLLECTOR_CONFIGS = [
    "otelcol.yaml",
    "otelcol-loadbalancing.yaml",
    "otelcol-backend.yaml",
    "otelcol-gateway.yaml",
]


@pytest.mark.parametrize("name", COLLECTOR_CONFIGS)
def test_collector_config_components_are_defined_and_used(name: str) -> None:
    """Each pipeline names only defined components, and every defined component is used."""
    config = _yaml(f"otelcol/{name}")
    service = config["service"]
    used: dict[str, set[str]] = {"receivers": set(), "processors": set(), "exporters": set()}
    for pipeline_name, pipeline in service["pipelines"].items():
        assert pipeline_name.split("/")[0] in {"traces", "metrics", "logs"}
        assert pipeline["receivers"] and pipeline["exporters"], pipeline_name
        for kind in used:
            used[kind] |= set(pipeline.get(kind, []))
    for kind, names in used.items():
        assert names == set(config.get(kind) or {}), f"{name}: {kind} defined vs used"
    assert set(service.get("extensions", [])) == set(config.get("extensions") or {})


def test_collector_sends_traces_to_jaeger_and_metrics_to_prometheus() -> None:
    """OTLP in; traces to Jaeger's OTLP port; metrics on the port Prometheus scrapes."""
    config = _yaml("otelcol/otelcol.yaml")
    assert set(config["receivers"]["otlp"]["protocols"]) == {"grpc", "http"}
    pipelines = config["service"]["pipelines"]
    assert pipelines["traces"]["exporters"] == ["otlp/jaeger"]
    assert config["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger:4317"
    assert pipelines["metrics"]["exporters"] == ["prometheus"]
    port = config["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    scrape = _yaml("prometheus/prometheus.yml")["scrape_configs"][0]
    assert scrape["static_configs"][0]["targets"] == [f"otel-collector:{port}"]
    assert scrape["honor_labels"] is True  # keep job = service.name from the Collector


def test_loadbalancing_routes_by_trace_id_to_the_backends() -> None:
    """The front tier routes traces by trace id to exactly the back-tier services in compose."""
    front = _yaml("otelcol/otelcol-loadbalancing.yaml")
    balancer = front["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID"
    assert front["service"]["pipelines"]["traces"]["exporters"] == ["loadbalancing"]
    assert "batch" not in front["service"]["pipelines"]["traces"]["processors"]
    hosts = balancer["resolver"]["static"]["hostnames"]
    override = _yaml("compose.loadbalancing.yaml")["services"]
    assert {h.rsplit(":", 1)[0] for h in hosts} == set(override) - {"otel-collector"}
    backend = _yaml("otelcol/otelcol-backend.yaml")
    grpc = backend["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert {h.rsplit(":", 1)[1] for h in hosts} == {grpc.rsplit(":", 1)[1]}
    policies = backend["processors"]["tail_sampling"]["policies"]
    (low,) = [p for p in policies if p["name"] == "low-score"]
    (condition,) = low["ottl_condition"]["spanevent"]
    assert semconv.GEN_AI_EVALUATION_RESULT_EVENT in condition
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE in condition


def test_gateway_stack_routes_traces_by_trace_id_to_gateway_replicas_that_forward_on() -> None:
    """Front tier: traces and logs by trace id to exactly the gateway replicas of
    compose.gateway.yaml on their OTLP/gRPC port; each replica forwards to the backend Collector,
    which exports traces to Jaeger and metrics where the gateway stack's Prometheus scrapes."""
    front = _yaml("otelcol/otelcol-gateway.yaml")
    balancer = front["exporters"]["loadbalancing"]
    assert balancer["routing_key"] == "traceID"
    pipelines = front["service"]["pipelines"]
    assert pipelines["traces"]["exporters"] == pipelines["logs"]["exporters"] == ["loadbalancing"]
    assert "batch" not in pipelines["traces"]["processors"]
    assert balancer["protocol"]["otlp"]["retry_on_failure"]["enabled"] is True
    services = _yaml("compose.gateway.yaml")["services"]
    gateways = {name: s for name, s in services.items() if name.startswith("groundwire-gateway")}
    assert len(gateways) == 2
    hosts = balancer["resolver"]["static"]["hostnames"]
    assert {h.rsplit(":", 1)[0] for h in hosts} == set(gateways)
    backend_config = {t: src for src, t in _bind_mounts(services["otel-collector-backend"])}
    backend = yaml.safe_load(backend_config["/etc/otelcol/config.yaml"].read_text())
    for name, service in gateways.items():
        command = service["command"][-1]
        assert "groundwire serve" in command and "--evaluators" in command, name
        grpc = re.search(r"--grpc (\S+)", command)
        assert grpc is not None and {h.rsplit(":", 1)[1] for h in hosts} == {
            grpc.group(1).rsplit(":", 1)[1]
        }
        forward = re.search(r"--forward http://([\w-]+):(\d+)", command)
        assert forward is not None and forward.group(1) == "otel-collector-backend"
        http = backend["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
        assert http.rsplit(":", 1)[1] == forward.group(2)
        assert "/readyz" in " ".join(service["healthcheck"]["test"])
    assert front["exporters"]["otlp/backend"]["endpoint"].startswith("otel-collector-backend:")
    assert set(backend["service"]["pipelines"]) >= {"traces", "metrics", "logs"}
    scraped = {t: src for src, t in _bind_mounts(services["prometheus"])}
    prometheus = yaml.safe_load(scraped["/etc/prometheus/prometheus.yml"].read_text())
    port = backend["exporters"]["prometheus"]["endpoint"].rsplit(":", 1)[1]
    targets = prometheus["scrape_configs"][0]["static_configs"][0]["targets"]
    assert targets == [f"otel-collector-backend:{port}"]


# --- compose and provisioning ---------------------------------------------------------------------


def _bind_mounts(service: dict[str, Any]) -> list[tuple[Path, str]]:
    mounts = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        assert source.startswith("./"), f"only bind mounts of example files expected: {volume}"
        mounts.append((EXAMPLE / source, target))
    return mounts


COMPOSE_FILES = ["compose.yaml", "compose.loadbalancing.yaml", "compose.gateway.yaml"]


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_images_are_pinned_and_mounts_exist(name: str) -> None:
    """Every image has a fixed version tag and every bind-mounted file or folder exists."""
    for service_name, service in _yaml(name)["services"].items():
        if "image" in service:
            image, _, tag = service["image"].rpartition(":")
            assert image and re.fullmatch(r"v?\d+\.\d+\.\d+", tag), (service_name, tag)
        for source, _ in _bind_mounts(service):
            assert source.exists(), f"{name}: {service_name} mounts missing {source}"


def test_compose_starts_the_five_services_wired_together() -> None:
    """Collector, Jaeger, Prometheus, Loki and Grafana, with configs where each program reads
    them."""
    services = _yaml("compose.yaml")["services"]
    assert set(services) == {"otel-collector", "jaeger", "prometheus", "loki", "grafana"}
    collector = {t: s for s, t in _bind_mounts(services["otel-collector"])}
    assert collector["/etc/otelcol/config.yaml"] == EXAMPLE / "otelcol" / "otelcol.yaml"
    assert "--config=/etc/otelcol/config.yaml" in services["otel-collector"]["command"]
    prometheus = {t: s for s, t in _bind_mounts(services["prometheus"])}
    (rules,) = _yaml("prometheus/prometheus.yml")["rule_files"]
    assert prometheus[rules] == RULES
    grafana = {t: s for s, t in _bind_mounts(services["grafana"])}
    provider = _yaml("grafana/provisioning/dashboards/groundwire.yaml")["providers"][0]
    dashboards = grafana[provider["options"]["path"]]
    assert (dashboards / DASHBOARD.name).resolve() == DASHBOARD.resolve()
    assert grafana["/etc/grafana/provisioning"] == EXAMPLE / "grafana" / "provisioning"
    assert {"4317:4317", "4318:4318"} <= set(services["otel-collector"]["ports"])


def test_grafana_datasources_point_at_the_compose_services() -> None:
    """The provisioned Prometheus (default) and Jaeger datasources use the compose hostnames."""
    sources = {
        s["type"]: s
        for s in _yaml("grafana/provisioning/datasources/datasources.yaml")["datasources"]
    }
    assert sources["prometheus"]["url"] == "http://prometheus:9090"
    assert sources["prometheus"]["isDefault"] is True
    assert sources["jaeger"]["url"] == "http://jaeger:16686"
    assert sources["loki"]["url"] == "http://loki:3100"


COMPOSE_SPEC_WHEEL = "docker-compose==1.29.2"
"""The last Python Compose: it ships the Compose Specification's JSON schema (2021)."""


@pytest.fixture(scope="session")
def compose_schema(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The Compose Specification JSON schema, taken from the docker-compose wheel on PyPI."""
    pytest.importorskip("jsonschema")
    folder = tmp_path_factory.mktemp("compose-spec")
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", str(folder)]
    done = subprocess.run(
        [*pip, COMPOSE_SPEC_WHEEL],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot download {COMPOSE_SPEC_WHEEL} for its schema: {done.stderr[-500:]}")
    (wheel,) = folder.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        schema: dict[str, Any] = json.loads(archive.read("compose/config/compose_spec.json"))
    return schema


@pytest.mark.parametrize("name", COMPOSE_FILES)
def test_compose_files_follow_the_compose_specification(
    compose_schema: dict[str, Any], name: str
) -> None:
    """Both compose files validate against the Compose Specification schema.

    The top-level `name` postdates that schema (2021) and is checked on its own.
    """
    import jsonschema

    document = _yaml(name)
    project = document.pop("name", "groundwire-observability")
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", project), "compose project names are lower-case"
    errors = [e.message for e in jsonschema.Draft7Validator(compose_schema).iter_errors(document)]
    assert not errors, errors


# --- evaluation results as log records: Collector logs pipeline, Loki, the logs panel -------------

LOKI_OTLP = "http://loki:3100/otlp"
"""Loki's native OTLP endpoint (the otlphttp exporter appends /v1/logs)."""


def _loki_label(attribute: str) -> str:
    """How Loki names an OTLP attribute in structured metadata: dots become underscores."""
    return attribute.replace(".", "_")


@pytest.mark.parametrize("name", ["otelcol.yaml", "otelcol-loadbalancing.yaml"])
def test_collector_sends_log_records_to_loki(name: str) -> None:
    """Every tier apps send OTLP to has a logs pipeline into Loki's OTLP endpoint, so log-based
    result events are never refused for want of a pipeline."""
    config = _yaml(f"otelcol/{name}")
    pipeline = config["service"]["pipelines"]["logs"]
    assert pipeline["receivers"] == ["otlp"]
    (exporter,) = pipeline["exporters"]
    assert exporter.startswith("otlphttp")
    assert config["exporters"][exporter]["endpoint"] == LOKI_OTLP
    loki = _yaml("compose.yaml")["services"]["loki"]
    host_port = urllib.parse.urlsplit(LOKI_OTLP).port
    assert f"{host_port}:{host_port}" in loki["ports"]
    assert "loki" in _yaml("compose.yaml")["services"]["otel-collector"]["depends_on"]


def test_loki_datasource_links_each_record_to_its_trace_in_jaeger() -> None:
    """The Loki datasource turns a record's trace_id (structured metadata) into a Jaeger link."""
    sources = {
        s["type"]: s
        for s in _yaml("grafana/provisioning/datasources/datasources.yaml")["datasources"]
    }
    (field,) = sources["loki"]["jsonData"]["derivedFields"]
    assert (field["matcherType"], field["matcherRegex"]) == ("label", "trace_id")
    assert field["datasourceUid"] == sources["jaeger"]["uid"]
    assert field["url"] == "$${__value.raw}"  # `$$`: a literal `$` in Grafana provisioning


def test_logs_panel_lists_latest_failed_evaluations() -> None:
    """The logs panel queries Loki for groundwire's result records that errored (WARN) or scored
    at or below the threshold, newest first, filtered by the dashboard's service and evaluator."""
    (panel,) = [p for p in panels(load_dashboard()) if p["type"] == "logs"]
    assert panel["options"]["sortOrder"] == "Descending"
    assert panel["options"]["enableLogDetails"] is True
    name = _loki_label(semconv.GEN_AI_EVALUATION_NAME)
    value = _loki_label(semconv.GEN_AI_EVALUATION_SCORE_VALUE)
    exprs = {t["refId"]: t["expr"] for t in panel["targets"]}
    for expr in exprs.values():
        # Loki refuses a selector whose every matcher matches "" (`=~".*"`, the "All" value):
        # `!=""` keeps the query valid whatever the service variable holds
        assert expr.startswith('{service_name=~"$service", service_name!=""}')
        assert f'| {name}!=""' in expr and f'| {name}=~"$evaluator"' in expr
        assert "trace={{.trace_id}}" in expr
    assert '| severity_text="WARN"' in exprs["A"]
    assert f'| {value} <= $threshold | __error__=""' in exprs["B"]
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    assert (variables["DS_LOKI"]["type"], variables["DS_LOKI"]["query"]) == ("datasource", "loki")
