"""Zero-code scoring, the operator's way, run locally: the unchanged app of app.py is scored by
`opentelemetry-instrument` with the environment the Kubernetes manifests give the pod.

What it shows:
- instrumentation.yaml (the operator's `Instrumentation` resource) and deployment.yaml (the app's
  Deployment with its `GROUNDWIRE_*` variables) are the whole configuration: this script reads
  their `env` entries, adds what the operator adds (`OTEL_SERVICE_NAME` from the workload,
  `OTEL_EXPORTER_OTLP_ENDPOINT` from `spec.exporter.endpoint`, pointed here at a local collector)
  and runs `opentelemetry-instrument python app.py`, as the injected sitecustomize would;
- the app has no scoring code: the distro builds the tracer, meter and logger providers,
  groundwire's integration traces the chain, and groundwire's `opentelemetry_post_instrument`
  hook scores each turn on those providers;
- what the collector receives: every turn with its `gen_ai.evaluation.result` per evaluator (as
  span events on evaluation spans under the turn, and as log records), and the
  `groundwire.evaluations` counter accounting for every evaluation.

No cluster, network or key: the collector is `groundwire.testing.OtlpHttpReceiver` on loopback.
Needs `opentelemetry-distro` (in the test extra) and pyyaml.

Run from the repository root:

    .venv/bin/python examples/zero_code/run_locally.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from groundwire.testing import OtlpHttpReceiver

HERE = Path(__file__).resolve().parent


def manifest_env(receiver_endpoint: str) -> dict[str, str]:
    """The pod's environment as the operator builds it from the two manifests."""
    instrumentation = yaml.safe_load((HERE / "instrumentation.yaml").read_text())
    deployment = yaml.safe_load((HERE / "deployment.yaml").read_text())
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    spec: dict[str, Any] = instrumentation["spec"]
    env = {"OTEL_SERVICE_NAME": deployment["metadata"]["name"]}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = spec["exporter"]["endpoint"]
    for entry in [*spec.get("env", []), *spec["python"].get("env", []), *container["env"]]:
        env[entry["name"]] = str(entry["value"])
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver_endpoint  # the local stand-in collector
    return env


def main() -> None:
    """Run the app under opentelemetry-instrument; summarise what the collector received."""
    with OtlpHttpReceiver() as collector:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
        env.update(manifest_env(collector.endpoint))
        env["OTEL_METRIC_EXPORT_INTERVAL"] = "1000"  # faster than the default 60 s, for the demo
        for name in sorted(k for k in env if k.startswith(("OTEL_", "GROUNDWIRE_"))):
            if name != "OTEL_EXPORTER_OTLP_ENDPOINT":
                print(f"{name}={env[name]}")
        instrument = Path(sys.executable).parent / "opentelemetry-instrument"
        done = subprocess.run(
            [str(instrument), sys.executable, "app.py"],
            cwd=HERE,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        print(done.stdout, end="")
        if done.returncode != 0:
            sys.exit(f"the app failed:\n{done.stderr}")
        collector.wait_for(lambda r: len(r.spans("evaluation")) >= 3, timeout_s=10)
        summarise(collector)


def summarise(collector: OtlpHttpReceiver) -> None:
    """Per turn: the question and its scores; then the counter of evaluations by outcome."""
    spans = collector.spans()
    roots = sorted(
        (s for s in spans if s.parent_span_id is None and s.name != "evaluation"),
        key=lambda s: s.start_time_unix_nano,
    )
    for root in roots:
        events = [
            e.attributes
            for s in spans
            if s.name == "evaluation" and s.parent_span_id == root.span_id
            for e in s.events
        ]
        scores = ", ".join(
            f"{a['gen_ai.evaluation.name']}={a.get('gen_ai.evaluation.score.value')}"
            for a in sorted(events, key=lambda a: a["gen_ai.evaluation.name"])
        )
        question = root.attributes.get("input.value", "?")
        print(f"turn {question!r}: {scores}")
    records = collector.log_records("gen_ai.evaluation.result")
    print(f"gen_ai.evaluation.result log records: {len(records)}")
    newest: dict[tuple[Any, ...], float] = {}
    for point in collector.metric_points("groundwire.evaluations"):
        newest[tuple(sorted(point.attributes.items()))] = point.value or 0.0
    ok = sum(v for k, v in newest.items() if ("groundwire.outcome", "ok") in k)
    print(f"groundwire.evaluations ok: {ok:g}")
    resources = {s.resource.get("telemetry.auto.version") for s in spans}
    print(f"providers: the distro's (telemetry.auto.version {', '.join(map(str, resources))})")


if __name__ == "__main__":
    main()
