"""Every dashboard query and alert expression, run by a real Prometheus over a real app's metrics.

A small instrumented app (`metrics_app`, in its own process: `groundwire.configure()` sets global
providers) serves groundwire's Prometheus endpoint while it scores RAG turns with real evaluators;
Debian's Prometheus scrapes it every second and loads the example alert rules. Each PromQL
expression of the dashboard (template variables resolved the way Grafana does) and of the rules
must return data with the labels its legend or `by` clause names: a query that returns nothing is
a broken panel.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.observability.conftest import (
    EXAMPLE,
    ROOT,
    RULES,
    load_dashboard,
    panels,
)
from tests.observability.metrics_app import JUDGE_MODEL

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
"""Slow: Prometheus (maybe installed by apt-get first) and the app start in the first test."""

SERVICE = "rag-app"
GATEWAY_SERVICE = "groundwire-gateway"
READY_DEADLINE_S = 60.0
WINDOW = "1m"
"""Stands in for `$__rate_interval` and `$__range`: longer than the whole run."""
_LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_BY_CLAUSE = re.compile(r"\bby\s*\(([^)]*)\)")


@dataclass(frozen=True)
class Query:
    """One PromQL expression to check, with the labels each result series must carry."""

    where: str
    expr: str
    labels: tuple[str, ...]


def _dashboard_queries() -> list[Query]:
    """Every PromQL query of the dashboard (the Loki logs panel is checked in test_logql.py)."""
    queries: list[Query] = []
    for item in panels(load_dashboard()):
        for target in item["targets"]:
            source = target.get("datasource") or item.get("datasource") or {}
            if source.get("type") == "loki":
                continue
            labels = tuple(_LEGEND_LABEL.findall(target.get("legendFormat", "")))
            where = f"panel {item['title']!r} {target['refId']}"
            queries.append(Query(where, target["expr"], labels))
    return queries


def _rule_queries() -> list[Query]:
    queries: list[Query] = []
    for group in yaml.safe_load(RULES.read_text())["groups"]:
        for rule in group["rules"]:
            clauses = _BY_CLAUSE.findall(rule["expr"])
            outer = [x.strip() for x in clauses[0].split(",")] if clauses else []
            labels = tuple(x for x in outer if x and x != "le")
            queries.append(Query(f"alert {rule['alert']}", rule["expr"], labels))
    return queries


DASHBOARD_QUERIES = _dashboard_queries()
RULE_QUERIES = _rule_queries()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PromQLError(Exception):
    """Prometheus rejected a request (a broken expression): never retried."""


def _get(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        detail = error.read().decode(errors="replace")
        raise PromQLError(f"{error.code} for {urllib.parse.unquote(url)}: {detail}") from None


@dataclass
class Stack:
    """A running Prometheus scraping the running app; PromQL helpers over its HTTP API."""

    api: str
    variables: dict[str, str] = field(default_factory=dict)
    """The template variables as the dashboard opens (All selected: the variable's allValue)."""
    options: dict[str, list[str]] = field(default_factory=dict)
    """What each query variable lists (non-empty label values)."""

    def query(self, expr: str) -> list[dict[str, Any]]:
        """Instant query at now; the result vector (fails on a PromQL error)."""
        url = f"{self.api}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        body = _get(url)
        assert body["status"] == "success", body
        assert body["data"]["resultType"] == "vector", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def label_values(self, label: str, match: str) -> list[str]:
        """What Grafana's `label_values(match, label)` lists."""
        url = f"{self.api}/api/v1/label/{label}/values?" + urllib.parse.urlencode(
            {"match[]": match}
        )
        body = _get(url)
        assert body["status"] == "success", body
        values: list[str] = body["data"]
        return values

    def alerts(self) -> dict[str, set[str]]:
        """Active alerts: name -> states (pending, firing)."""
        found: dict[str, set[str]] = {}
        for alert in _get(f"{self.api}/api/v1/alerts")["data"]["alerts"]:
            found.setdefault(alert["labels"]["alertname"], set()).add(alert["state"])
        return found

    def render(self, expr: str, **chosen: str) -> str:
        """Substitute the dashboard's template variables as Grafana would (`chosen` overrides)."""
        values = {**self.variables, **chosen, "__rate_interval": WINDOW, "__range": WINDOW}
        for name in sorted(values, key=len, reverse=True):
            expr = expr.replace("${" + name + "}", values[name]).replace("$" + name, values[name])
        assert "$" not in expr, f"unresolved template variable in {expr!r}"
        return expr


def finite(result: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The series whose value is a number (not NaN or infinite)."""
    return [s for s in result if math.isfinite(float(s["value"][1]))]


def _regex_escape(value: str) -> str:
    """Escape a label value inside a PromQL regex string, as Grafana does for multi-values."""
    return re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\\\1", value)


def select(values: list[str]) -> str:
    """Several values of a multi-select variable, as Grafana puts them in a PromQL regex."""
    return "(" + "|".join(map(_regex_escape, values)) + ")"


def _resolve_variables(stack: Stack) -> None:
    """List each query variable's options in order and select the dashboard's default."""
    for variable in load_dashboard()["templating"]["list"]:
        kind, name = variable["type"], variable["name"]
        if kind == "query":
            query = variable["query"]["query"]
            match = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", query)
            assert match, f"variable {name}: unsupported query {query!r}"
            values = stack.label_values(match.group(2), stack.render(match.group(1)))
            stack.options[name] = [v for v in values if v]
            default = variable["current"]["value"]
            assert default == "$__all", f"variable {name}: the default should be All"
            stack.variables[name] = variable["allValue"]
        elif kind in ("custom", "textbox", "constant"):
            stack.variables[name] = variable["current"]["value"]


def _ready(stack: Stack) -> bool:
    try:
        _resolve_variables(stack)
        queries = [stack.render(q.expr) for q in DASHBOARD_QUERIES] + [q.expr for q in RULE_QUERIES]
        return all(finite(stack.query(expr)) for expr in queries) and len(stack.alerts()) == len(
            RULE_QUERIES
        )
    except (AssertionError, OSError):
        return False


def _start_app() -> tuple[subprocess.Popen[str], str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_", "OPENAI_"))
    }
    env["PYTHONPATH"] = str(ROOT)
    app = subprocess.Popen(
        [sys.executable, "-m", "tests.observability.metrics_app"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert app.stdout is not None
    line = app.stdout.readline()
    assert line.startswith("URL http://"), f"the app did not start: {line!r}"
    return app, line.split()[1]


def _start_gateways(workdir: Path) -> tuple[list[Any], Any, Callable[[], None]]:
    """Two real `groundwire serve` replicas put in the state the gateway row and alerts show: one
    whose downstream is down (its buffer over half full: lagging), and one that (when the returned
    callable runs, once Prometheus scrapes it, so that its counters visibly increase) forwards,
    drops a request its downstream refuses for good, refuses a malformed one, scores a trace."""
    from tests.gateway._traces import openinference_rag_trace, request
    from tests.gateway.conftest import GatewayProcess, RawDownstream

    downstream = RawDownstream().start()
    downstream.status = 400
    closed = _free_port()
    lagging = GatewayProcess(
        ["--listen", "127.0.0.1:0", "--forward", f"http://127.0.0.1:{closed}",
         "--max-request-bytes", "4096"],
        workdir / "gateway-lagging.log",
        {"GROUNDWIRE_GATEWAY_BUFFER_MAX_BYTES": "4096"},
    )  # fmt: skip
    scoring = GatewayProcess(
        ["--listen", "127.0.0.1:0", "--forward", downstream.endpoint, "-e", "quoted_spans",
         "--quiet-period", "0.2"],
        workdir / "gateway-scoring.log",
    )  # fmt: skip

    def post(gateway: Any, body: bytes) -> None:
        req = urllib.request.Request(
            gateway.url + "/v1/traces",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with contextlib.suppress(urllib.error.HTTPError):  # the malformed one gets 400
            urllib.request.urlopen(req, timeout=10).read()

    trace = openinference_rag_trace()
    for span in trace:
        post(lagging, request([span]))  # about 3 KB of a 4 KB buffer, never delivered

    def trigger() -> None:
        # Two drops a few scrapes apart: Prometheus sees a counter's increase only from its
        # second sample on (a series that appears at 1 has not increased).
        for count in (1, 2):
            post(scoring, request([trace[count]]))  # refused for good downstream: dropped
            scoring.wait_health(lambda h, n=count: h["counts"].get("dropped:traces", 0) == n)
            time.sleep(2.5)
        downstream.status = 200
        post(scoring, request(openinference_rag_trace()))  # forwarded and scored
        post(scoring, b"{not json")  # refused: malformed
        scoring.wait_health(lambda h: h["turns"].get("scored") == 1)

    return [lagging, scoring], downstream, trigger


def _start_prometheus(
    binary: str,
    scrape_url: str,
    workdir: Path,
    gateways: list[Any] = (),  # type: ignore[assignment]
) -> tuple[Any, str]:
    target = urllib.parse.urlsplit(scrape_url)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [
            {
                "job_name": SERVICE,
                "metrics_path": target.path,
                "static_configs": [{"targets": [target.netloc]}],
            },
            {
                "job_name": GATEWAY_SERVICE,
                "static_configs": [{"targets": [f"127.0.0.1:{g.http_port}" for g in gateways]}],
            },
        ],
    }
    config_path = workdir / "prometheus.yml"
    config_path.write_text(yaml.safe_dump(config))
    port = _free_port()
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config_path}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "prometheus.log").open("w"),
    )
    return process, f"http://127.0.0.1:{port}"


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@pytest.fixture(scope="module")
def stack(prometheus_bin: tuple[str, str]) -> Iterator[Stack]:
    """The app scoring turns while Prometheus scrapes it, until every query has data."""
    with tempfile.TemporaryDirectory(prefix="groundwire-prom-") as tmp:
        app, scrape_url = _start_app()
        gateways, downstream, trigger = _start_gateways(Path(tmp))
        prometheus, api = _start_prometheus(prometheus_bin[0], scrape_url, Path(tmp), gateways)
        stack = Stack(api)
        try:
            deadline = time.monotonic() + READY_DEADLINE_S
            while not _scraped(stack):
                assert prometheus.poll() is None, (Path(tmp) / "prometheus.log").read_text()
                assert time.monotonic() < deadline, "Prometheus never scraped the app"
                time.sleep(0.5)
            while not _scraped(stack, GATEWAY_SERVICE):
                assert time.monotonic() < deadline, "Prometheus never scraped the gateways"
                time.sleep(0.5)
            trigger()
            assert app.stdin is not None
            app.stdin.write("go\n")
            app.stdin.flush()
            while not _ready(stack) and time.monotonic() < deadline:
                time.sleep(1.0)
            _resolve_variables(stack)
            yield stack
        finally:
            if app.stdin is not None and app.poll() is None:
                app.stdin.write("stop\n")
                app.stdin.close()
            try:
                app.wait(20)
            except subprocess.TimeoutExpired:
                _stop(app)
            _stop(prometheus)
            for gateway in gateways:
                gateway.kill()
            downstream.stop()


def _scraped(stack: Stack, job: str = SERVICE) -> bool:
    try:
        return any(s["value"][1] == "1" for s in stack.query(f'up{{job="{job}"}}'))
    except (AssertionError, OSError):
        return False


@pytest.mark.parametrize("query", DASHBOARD_QUERIES, ids=lambda q: q.where)
def test_dashboard_query_returns_data(stack: Stack, query: Query) -> None:
    """Each dashboard query, variables resolved, returns numbers carrying its legend's labels."""
    result = finite(stack.query(stack.render(query.expr)))
    assert result, f"{query.where}: no data for {stack.render(query.expr)}"
    for series in result:
        missing = [label for label in query.labels if label not in series["metric"]]
        assert not missing, f"{query.where}: series {series['metric']} lacks {missing}"


@pytest.mark.parametrize("query", RULE_QUERIES, ids=lambda q: q.where)
def test_alert_expression_returns_data(stack: Stack, query: Query) -> None:
    """Each alert expression fires on the app's data, with the labels its `by` clause keeps."""
    result = finite(stack.query(query.expr))
    assert result, f"{query.where}: no data for {query.expr}"
    for series in result:
        missing = [label for label in query.labels if label not in series["metric"]]
        assert not missing, f"{query.where}: series {series['metric']} lacks {missing}"
        expected = GATEWAY_SERVICE if "Gateway" in query.where else SERVICE
        assert series["metric"]["job"] == expected


def test_rules_are_evaluated_by_prometheus(stack: Stack) -> None:
    """Prometheus loaded the rules file and every alert is pending (each has a `for:`)."""
    alerts = stack.alerts()
    assert set(alerts) == {q.where.removeprefix("alert ") for q in RULE_QUERIES}
    assert all(states <= {"pending", "firing"} for states in alerts.values())


def test_service_variable_lists_the_scraped_service(stack: Stack) -> None:
    """`job` is the service: the variable lists the app; `target_info` ties it to service.name."""
    assert stack.options["service"] == [SERVICE]
    info = stack.query(f'target_info{{job="{SERVICE}"}}')
    assert [s["metric"]["service_name"] for s in info] == [SERVICE]


def test_evaluator_variable_lists_every_evaluator(stack: Stack) -> None:
    """The evaluator variable lists each evaluator the app ran, built-in and user-defined."""
    assert set(stack.options["evaluator"]) == {
        "quoted_spans",
        "quote_verification",
        "groundedness",
        "citation_support",
        "answer_policy",
    }


def test_model_variable_lists_the_judge_model(stack: Stack) -> None:
    """The model variable lists the judge model that judge evaluators record on their points."""
    assert stack.options["model"] == [JUDGE_MODEL]


def test_choosing_a_model_narrows_the_judge_panels_to_it(stack: Stack) -> None:
    """With the judge model selected, judge panels show data, all of it from that model."""
    titles = {"Judge tokens per second", "Judge agreement (groundedness)", "Verdicts in range"}
    queries = [q for q in DASHBOARD_QUERIES if q.where.split("'")[1].startswith(tuple(titles))]
    assert len(queries) == 4
    for query in queries:
        expr = stack.render(query.expr, model=select([JUDGE_MODEL]), service=select([SERVICE]))
        result = finite(stack.query(expr))
        assert result, f"{query.where}: no data for model {JUDGE_MODEL}"
        names = {s["metric"].get("gen_ai_evaluation_name", "groundedness") for s in result}
        assert names == {"groundedness"}, query.where


def test_outcomes_cover_every_kind(stack: Stack) -> None:
    """The app produced every outcome: ok, error, dropped, skipped and sampled_out."""
    result = stack.query("sum by (groundwire_outcome) (groundwire_evaluations_total)")
    assert {s["metric"]["groundwire_outcome"] for s in result} == {
        "ok",
        "error",
        "dropped",
        "skipped",
        "sampled_out",
    }
    skipped = stack.query('groundwire_evaluations_total{groundwire_outcome="skipped"}')
    assert {s["metric"]["gen_ai_evaluation_name"] for s in skipped} == {"citation_support"}


def test_rules_file_passes_promtool(prometheus_bin: tuple[str, str]) -> None:
    """`promtool check rules` accepts the alerting rules."""
    done = subprocess.run(
        [prometheus_bin[1], "check", "rules", str(RULES)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS: 8 rules found" in done.stdout + done.stderr


def test_alerts_fire_after_their_for_with_their_annotations(
    prometheus_bin: tuple[str, str],
) -> None:
    """`promtool test rules`: only the unhealthy service alerts, after `for:`, exactly annotated."""
    tests = Path(__file__).parent / "promtool" / "groundwire-rules.test.yml"
    done = subprocess.run(
        [prometheus_bin[1], "test", "rules", tests.name],
        cwd=tests.parent,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_compose_prometheus_config_passes_promtool(
    prometheus_bin: tuple[str, str], tmp_path: Path
) -> None:
    """`promtool check config` accepts the compose stack's prometheus.yml (rules path localised)."""
    config = yaml.safe_load((EXAMPLE / "prometheus" / "prometheus.yml").read_text())
    assert config["rule_files"] == ["/etc/prometheus/groundwire-rules.yml"]
    config["rule_files"] = [str(RULES)]
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    done = subprocess.run(
        [prometheus_bin[1], "check", "config", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
