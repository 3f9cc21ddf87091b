"""The logs panel's LogQL against the log records the sample app really sends.

No Loki binary exists where these tests run, so the sample app (the five-minute guide's app)
exports to a real OTLP receiver and each received `gen_ai.evaluation.result` record is mapped the
way Loki's OTLP ingestion maps it (resource `service.name` -> the `service_name` label; log
attributes, `severity_text`, `trace_id`, `span_id` -> structured metadata with dots turned into
underscores). Every field the panel filters on or prints must exist there, and the panel's
low-score query must select some of the sample app's misquoting turns.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver, ReceivedLogRecord
from tests.observability.conftest import EXAMPLE, ROOT, load_dashboard, panels

pytestmark = pytest.mark.slow

TURNS = 10
_FIELD = re.compile(r"\{\{\s*\.(\w+)\s*\}\}")
_FILTER = re.compile(r"\|\s*(\w+)\s*(?:!=|=~|!~|<=|>=|==|=|<|>)")


def _as_loki(record: ReceivedLogRecord) -> dict[str, str]:
    """The labels and structured metadata Loki's OTLP ingestion gives this record."""
    fields = {"service_name": str(record.resource.get(semconv.SERVICE_NAME, ""))}
    fields.update({key.replace(".", "_"): str(value) for key, value in record.attributes.items()})
    fields["severity_text"] = record.severity_text
    fields["trace_id"] = record.trace_id or ""
    fields["span_id"] = record.span_id or ""
    return fields


def _records() -> list[ReceivedLogRecord]:
    """Run the sample app against a real OTLP/HTTP receiver; its result log records."""
    with OtlpHttpReceiver() as receiver:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
        env.update(
            PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
            OTEL_SERVICE_NAME="library-bot",
            OTEL_BLRP_SCHEDULE_DELAY="100",
        )
        app = [str(EXAMPLE / "sample_app.py"), "--turns", str(TURNS), "--interval", "0"]
        done = subprocess.run(
            [sys.executable, *app],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert receiver.wait_for(lambda r: len(r.log_records()) >= 2 * TURNS)
        return receiver.log_records(semconv.GEN_AI_EVALUATION_RESULT_EVENT)


def test_the_logs_panel_finds_what_the_sample_app_sends() -> None:
    """Each field the panel uses exists on the records; the low-score query selects the
    misquoting turns, each with the trace id its Jaeger link opens."""
    (panel,) = [p for p in panels(load_dashboard()) if p["type"] == "logs"]
    exprs = {t["refId"]: t["expr"] for t in panel["targets"]}
    records = [_as_loki(r) for r in _records()]
    assert len(records) == 2 * TURNS
    available = set().union(*records)
    used: set[str] = set()
    for expr in exprs.values():
        used |= set(_FIELD.findall(expr)) | set(_FILTER.findall(expr))
    used = {name for name in used if not name.startswith("__")}  # Loki's own, e.g. __error__
    optional = {
        semconv.ERROR_TYPE.replace(".", "_"),  # only on failed evaluations
        semconv.GEN_AI_EVALUATION_EXPLANATION.replace(".", "_"),
    }
    assert used - optional <= available, (used - optional) - available
    assert {r["service_name"] for r in records} == {"library-bot"}
    value = semconv.GEN_AI_EVALUATION_SCORE_VALUE.replace(".", "_")
    threshold = float(_default_threshold())
    low: list[dict[str, Any]] = [r for r in records if value in r and float(r[value]) <= threshold]
    assert low, "the sample app misquotes some sources: the panel must list them"
    assert all(len(r["trace_id"]) == 32 for r in low)


def _default_threshold() -> str:
    """The dashboard's default low-score threshold."""
    variables = {v["name"]: v for v in load_dashboard()["templating"]["list"]}
    return str(variables["threshold"]["current"]["value"])
