"""Live: `groundwire.configure()` in an app instrumented only by OpenLLMetry scores its turns,
inline and in the background, and the results arrive on the wire (a real OTLP receiver).

The app runs in a child process (configure() sets the global providers, once per process).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from groundwire import semconv
from groundwire.testing import OtlpHttpReceiver
from tests.dialects._apps import ANSWERS, QUESTIONS, ROOT

pytestmark = pytest.mark.slow

APP = """
import json, logging, sys
logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
import groundwire
from tests.online.conftest import HasContext

online = groundwire.configure(
    service_name="openllmetry-app",
    evaluators=["quoted_spans", HasContext()],
    inline=["quoted_spans"],
    instrument=False,
)
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
LangchainInstrumentor().instrument()
from tests.dialects._apps import run_langchain
if len(sys.argv) > 1:
    import os
    os.environ["TRACELOOP_TRACE_CONTENT"] = "false"
run_langchain()
drained = groundwire.shutdown(10.0)
stats = online.stats()
print(json.dumps({"drained": drained, "submitted": stats.submitted, "scored": stats.scored}))
"""


def run_app(endpoint: str, *args: str) -> tuple[dict[str, Any], str]:
    """Run the app against `endpoint`; its last stdout line (JSON) and its stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "GROUNDWIRE_"))}
    env.update(
        {
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path]),
        }
    )
    env.pop("TRACELOOP_TRACE_CONTENT", None)
    done = subprocess.run(
        [sys.executable, "-c", APP, *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_openllmetry_app_is_scored_inline_and_in_background_on_the_wire() -> None:
    """Each question's workflow span carries its inline quoted_spans event; a carrier span
    linked to it carries the background has_context result."""
    with OtlpHttpReceiver() as receiver:
        result, _ = run_app(receiver.endpoint)
        assert receiver.wait_for(
            lambda r: len(r.spans(semconv.EVALUATION_SPAN_NAME)) >= 2, timeout_s=10
        )
        spans = receiver.spans()
    assert result["drained"] and result["submitted"] == 2
    roots = sorted(
        (s for s in spans if s.name == "RunnableSequence.workflow"),
        key=lambda s: s.start_time_unix_nano,
    )
    assert len(roots) == 2
    assert all(r.scope == "opentelemetry.instrumentation.langchain" for r in roots)
    for root, answer in zip(roots, ANSWERS, strict=True):
        assert json.loads(root.attributes["traceloop.entity.output"])["outputs"] == answer
        (event,) = root.events
        assert event.name == semconv.GEN_AI_EVALUATION_RESULT_EVENT
        assert event.attributes[semconv.GEN_AI_EVALUATION_NAME] == "quoted_spans"
    # The first answer quotes its first context verbatim; the second quotes nothing.
    first, second = (r.events[0].attributes for r in roots)
    assert first[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert semconv.GEN_AI_EVALUATION_SCORE_VALUE not in second  # NaN: no quote to check
    carriers = receiver.spans(semconv.EVALUATION_SPAN_NAME)
    by_root = {c.parent_span_id: c for c in carriers}
    for root in roots:
        carrier = by_root[root.span_id]
        assert [(link.trace_id, link.span_id) for link in carrier.links] == [
            (root.trace_id, root.span_id)
        ]
        names = [e.attributes[semconv.GEN_AI_EVALUATION_NAME] for e in carrier.events]
        assert names == ["has_context"]
        assert carrier.events[0].attributes[semconv.GEN_AI_EVALUATION_SCORE_VALUE] == 1.0
    assert len(QUESTIONS) == len(roots)


def test_content_off_is_explained_once_in_the_log() -> None:
    """Spans without content: no turn, and one warning naming the family and the switch."""
    with OtlpHttpReceiver() as receiver:
        result, log = run_app(receiver.endpoint, "content-off")
    assert result["submitted"] == 0
    lines = [line for line in log.splitlines() if "no RAG turn yet" in line]
    assert lines == [
        "WARNING:groundwire.assembly:groundwire has found no RAG turn yet: 1 trace from service "
        "openllmetry-app (genai, openllmetry): content not recorded (TRACELOOP_TRACE_CONTENT=false)"
    ]
