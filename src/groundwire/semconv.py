"""Every telemetry name groundwire reads or writes, as typed constants.

Three vocabularies meet here:

* OpenInference (`openinference.*`, `input.value`, `retrieval.documents.{i}.document.*`,
  `evaluations.{i}.evaluation.*`): what Phoenix and OpenInference instrumentors use. The assembler
  reads these first.
* The OpenTelemetry GenAI semantic conventions (`gen_ai.*`): what Jaeger/Tempo users and the
  `gen_ai.evaluation.result` event use.
* groundwire's own metric names (`groundwire.*`): the GenAI conventions define no evaluation
  metric, so ours live in our namespace but use the conventions' attribute names.

Indexed names are templates: fill them with `.format(i=...)` or the helper functions below.
"""

from __future__ import annotations

from typing import Final

# --- OpenInference: span kinds and common attributes -------------------------------------------

OPENINFERENCE_SPAN_KIND: Final = "openinference.span.kind"
"""The OpenInference span kind (one of the `SPAN_KIND_*` values)."""
SPAN_KIND_CHAIN: Final = "CHAIN"
SPAN_KIND_RETRIEVER: Final = "RETRIEVER"
SPAN_KIND_RERANKER: Final = "RERANKER"
SPAN_KIND_LLM: Final = "LLM"
SPAN_KIND_EMBEDDING: Final = "EMBEDDING"
SPAN_KIND_TOOL: Final = "TOOL"
SPAN_KIND_AGENT: Final = "AGENT"
SPAN_KIND_EVALUATOR: Final = "EVALUATOR"
"""Kind of our evaluation carrier spans."""

INPUT_VALUE: Final = "input.value"
"""The operation's input (a query string, or JSON)."""
INPUT_MIME_TYPE: Final = "input.mime_type"
OUTPUT_VALUE: Final = "output.value"
"""The operation's output (an answer string, or JSON)."""
OUTPUT_MIME_TYPE: Final = "output.mime_type"
MIME_TEXT: Final = "text/plain"
MIME_JSON: Final = "application/json"

LLM_MODEL_NAME: Final = "llm.model_name"
LLM_PROVIDER: Final = "llm.provider"
LLM_TOKEN_COUNT_PROMPT: Final = "llm.token_count.prompt"
LLM_TOKEN_COUNT_COMPLETION: Final = "llm.token_count.completion"
LLM_TOKEN_COUNT_TOTAL: Final = "llm.token_count.total"
EMBEDDING_MODEL_NAME: Final = "embedding.model_name"
TOOL_NAME: Final = "tool.name"
"""OpenInference's name of the tool a TOOL span ran."""

RETRIEVAL_DOCUMENTS_PREFIX: Final = "retrieval.documents"
"""Prefix of the retriever's flattened document list."""
RERANKER_INPUT_DOCUMENTS_PREFIX: Final = "reranker.input_documents"
RERANKER_OUTPUT_DOCUMENTS_PREFIX: Final = "reranker.output_documents"
RERANKER_QUERY: Final = "reranker.query"
RERANKER_TOP_K: Final = "reranker.top_k"
RERANKER_MODEL_NAME: Final = "reranker.model_name"
DOCUMENT_CONTENT: Final = "document.content"
DOCUMENT_ID: Final = "document.id"
DOCUMENT_SCORE: Final = "document.score"
DOCUMENT_METADATA: Final = "document.metadata"
"""JSON object of the document's metadata."""

SESSION_ID: Final = "session.id"
USER_ID: Final = "user.id"
METADATA: Final = "metadata"

EVALUATIONS_PREFIX: Final = "evaluations"
"""Prefix of OpenInference's per-span evaluation list: `evaluations.{i}.evaluation.*`."""
EVALUATION_NAME: Final = "evaluation.name"
EVALUATION_SCORE: Final = "evaluation.score"
EVALUATION_LABEL: Final = "evaluation.label"
EVALUATION_EXPLANATION: Final = "evaluation.explanation"


def document_attribute(prefix: str, index: int, field: str) -> str:
    """`retrieval.documents.{index}.document.content` and the like."""
    return f"{prefix}.{index}.{field}"


def evaluation_attribute(index: int, field: str) -> str:
    """`evaluations.{index}.evaluation.score` and the like."""
    return f"{EVALUATIONS_PREFIX}.{index}.{field}"


# --- OpenTelemetry GenAI semantic conventions ---------------------------------------------------

GEN_AI_OPERATION_NAME: Final = "gen_ai.operation.name"
GEN_AI_OPERATION_RETRIEVAL: Final = "retrieval"
GEN_AI_OPERATION_CHAT: Final = "chat"
GEN_AI_OPERATION_EMBEDDINGS: Final = "embeddings"
GEN_AI_OPERATION_INVOKE_AGENT: Final = "invoke_agent"
GEN_AI_OPERATION_TEXT_COMPLETION: Final = "text_completion"
GEN_AI_OPERATION_EXECUTE_TOOL: Final = "execute_tool"
GEN_AI_TOOL_NAME: Final = "gen_ai.tool.name"
"""The tool an `execute_tool` span ran."""
GEN_AI_TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
"""The id the model gave the tool call an `execute_tool` span ran (orders parallel calls)."""
GEN_AI_TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
"""GenAI (opt-in content): the arguments a tool was called with, JSON as the model wrote them."""
GEN_AI_TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
"""GenAI (opt-in content): what the tool returned (text, or JSON)."""
GEN_AI_PROVIDER_NAME: Final = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL: Final = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL: Final = "gen_ai.response.model"
GEN_AI_USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
GEN_AI_TOKEN_TYPE: Final = "gen_ai.token.type"
"""`input` or `output`, on the judge token counter."""
GEN_AI_DATA_SOURCE_ID: Final = "gen_ai.data_source.id"
GEN_AI_RETRIEVAL_QUERY_TEXT: Final = "gen_ai.retrieval.query.text"
GEN_AI_RETRIEVAL_DOCUMENTS: Final = "gen_ai.retrieval.documents"
"""JSON list of `{"id": ..., "score": ...}`, one per retrieved document, in rank order."""
GEN_AI_INPUT_MESSAGES: Final = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES: Final = "gen_ai.output.messages"

GEN_AI_EVALUATION_RESULT_EVENT: Final = "gen_ai.evaluation.result"
"""The event name of one evaluation result."""
GEN_AI_EVALUATION_NAME: Final = "gen_ai.evaluation.name"
GEN_AI_EVALUATION_SCORE_VALUE: Final = "gen_ai.evaluation.score.value"
GEN_AI_EVALUATION_SCORE_LABEL: Final = "gen_ai.evaluation.score.label"
GEN_AI_EVALUATION_EXPLANATION: Final = "gen_ai.evaluation.explanation"
ERROR_TYPE: Final = "error.type"
SERVICE_NAME: Final = "service.name"

# --- groundwire metrics and attributes ----------------------------------------------------------

METRIC_EVALUATION_SCORE: Final = "groundwire.evaluation.score"
"""Histogram of scores in [0, 1], unit `1`."""
METRIC_EVALUATIONS: Final = "groundwire.evaluations"
"""Counter of evaluations by `groundwire.outcome`."""
METRIC_EVALUATION_DURATION: Final = "groundwire.evaluation.duration"
"""Histogram of evaluation time, unit `s`."""
METRIC_QUEUE_SIZE: Final = "groundwire.queue.size"
"""Gauge of turns waiting in the background runner's queue."""
METRIC_JUDGE_TOKENS: Final = "groundwire.judge.tokens"
"""Counter of LLM-judge tokens by `gen_ai.token.type`."""
METRIC_JUDGE_AGREEMENT: Final = "groundwire.judge.agreement"
"""Histogram of agreement between the two groundedness judges, in [0, 1]."""

GROUNDWIRE_OUTCOME: Final = "groundwire.outcome"
"""Attribute on `groundwire.evaluations`: one of the `OUTCOME_*` values."""
OUTCOME_OK: Final = "ok"
OUTCOME_ERROR: Final = "error"
OUTCOME_DROPPED: Final = "dropped"
OUTCOME_SAMPLED_OUT: Final = "sampled_out"
OUTCOME_SKIPPED: Final = "skipped"

GROUNDWIRE_FRAMEWORK: Final = "groundwire.framework"
"""Which integration recorded a turn (`langchain`, `llamaindex`)."""
FRAMEWORK_LLAMAINDEX: Final = "llamaindex"
"""`groundwire.framework` on the root span of a LlamaIndex run."""

SCORE_BUCKETS: Final = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0)
"""Explicit histogram bucket bounds for scores in [0, 1]."""
DURATION_BUCKETS_S: Final = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
)
"""Explicit histogram bucket bounds for evaluation durations in seconds."""

# --- environment variables ----------------------------------------------------------------------

ENV_HIDE_INPUTS: Final = "GROUNDWIRE_HIDE_INPUTS"
"""`true` keeps `input.value` (and queries) off spans."""
ENV_HIDE_OUTPUTS: Final = "GROUNDWIRE_HIDE_OUTPUTS"
"""`true` keeps `output.value` (and answers) off spans."""
ENV_HIDE_DOCUMENT_TEXT: Final = "GROUNDWIRE_HIDE_DOCUMENT_TEXT"
"""`true` keeps retrieved document text off spans (ids and scores stay)."""
ENV_MAX_VALUE_LENGTH: Final = "GROUNDWIRE_MAX_VALUE_LENGTH"
"""Truncate captured text values to this many characters (0 or unset: no limit)."""
ENV_GENAI_CAPTURE_MESSAGE_CONTENT: Final = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The GenAI instrumentations' content switch (`NO_CONTENT`, `SPAN_ONLY`, `EVENT_ONLY`,
`SPAN_AND_EVENT`, or true/false): when set, `NO_CONTENT`, `SPAN_ONLY` and false keep
`Score.details` out of the result log records' bodies."""

# --- online evaluation (groundwire.configure) ---------------------------------------------------

EVALUATION_SPAN_NAME: Final = "evaluation"
"""Name of the evaluation carrier span (kind EVALUATOR) that holds results computed afterwards."""
INSTRUMENTATION_SCOPE: Final = "groundwire"
"""Instrumentation scope (tracer and meter name) of everything groundwire emits itself."""
GROUNDWIRE_EVALUATION_MODE: Final = "groundwire.evaluation.mode"
"""On an evaluation carrier span and each result log record: `inline`, `background` (live) or
`offline` (re-scored from a file)."""
GROUNDWIRE_EVALUATOR_VERSION: Final = "groundwire.evaluator.version"
"""On each `gen_ai.evaluation.result` log record: the version of the code that scored (the
evaluator's `version` attribute, else its distribution's version); absent when unknown."""
GROUNDWIRE_JUDGE_MODEL: Final = "groundwire.judge.model"
"""On each `gen_ai.evaluation.result` (span event and log record) of a judge evaluator, and in each
scores-file row's `provenance`: the judge model that scored. The GenAI conventions' proposed
`gen_ai.evaluation.evaluator.*` names would replace these once merged."""
GROUNDWIRE_JUDGE_PROMPT_VERSION: Final = "groundwire.judge.prompt.version"
"""Beside `groundwire.judge.model`: a stable hash of the judge's prompt texts (any edit changes
it), so a calibration can be matched with the prompts that produced the scores."""
EVALUATION_MODE_INLINE: Final = "inline"
EVALUATION_MODE_BACKGROUND: Final = "background"
EVALUATION_MODE_OFFLINE: Final = "offline"

EVENTS_LOGS: Final = "logs"
"""`events=`: results as log-based `gen_ai.evaluation.result` events only (OTEP 4430)."""
EVENTS_SPAN: Final = "span"
"""`events=`: results as span events only (on the turn's root span or the carrier span)."""
EVENTS_BOTH: Final = "both"
"""`events=`: results both as log-based events and as span events (the default)."""
EVENTS_CHOICES: Final = (EVENTS_LOGS, EVENTS_SPAN, EVENTS_BOTH)
"""Values of `configure(events=...)` / `GROUNDWIRE_EVENTS`."""

ENV_SERVICE_NAME: Final = "GROUNDWIRE_SERVICE_NAME"
"""`service.name` of the providers groundwire creates (falls back to `OTEL_SERVICE_NAME`)."""
ENV_EVALUATORS: Final = "GROUNDWIRE_EVALUATORS"
"""Comma-separated evaluator names to run online."""
ENV_EVALUATOR_OPTIONS: Final = "GROUNDWIRE_EVALUATOR_OPTIONS"
"""JSON options for evaluators named by name: `{"quote_verification": {"cosine": "off"}}`."""
ENV_INLINE: Final = "GROUNDWIRE_INLINE"
"""Comma-separated names of sync evaluators to run inline, on the turn's root span."""
ENV_SAMPLE_RATE: Final = "GROUNDWIRE_SAMPLE_RATE"
"""Fraction of traces scored, in [0, 1]; deterministic on the trace id."""
ENV_EVALUATOR_SAMPLE_RATES: Final = "GROUNDWIRE_EVALUATOR_SAMPLE_RATES"
"""Per-evaluator rates: `name=rate,name=rate`."""
ENV_TURN_FILTER: Final = "GROUNDWIRE_TURN_FILTER"
"""`module:function` of a predicate on `RagTurn`; turns it rejects are sampled out."""
ENV_JUDGE_TOKEN_BUDGET: Final = "GROUNDWIRE_JUDGE_TOKEN_BUDGET"
"""LLM-judge tokens allowed per rolling hour; beyond it judge evaluations are skipped."""
ENV_MAX_QUEUE_SIZE: Final = "GROUNDWIRE_MAX_QUEUE_SIZE"
"""Turns the background queue holds before it drops (counted)."""
ENV_WORKERS: Final = "GROUNDWIRE_WORKERS"
"""Worker threads running sync evaluators."""
ENV_ASYNC_CONCURRENCY: Final = "GROUNDWIRE_ASYNC_CONCURRENCY"
"""Async (LLM judge) evaluations in flight at once."""
ENV_EVALUATOR_TIMEOUT: Final = "GROUNDWIRE_EVALUATOR_TIMEOUT"
"""Seconds one evaluation may take before it is abandoned and counted as an error."""
ENV_EXPORTER: Final = "GROUNDWIRE_EXPORTER"
"""`auto` (OTLP when an endpoint is set, else file), `otlp`, `file` or `none`."""
ENV_EVENTS: Final = "GROUNDWIRE_EVENTS"
"""Where evaluation results go: `logs`, `span` or `both` (default; see docs/online.md)."""
ENV_PHOENIX_ANNOTATIONS: Final = "GROUNDWIRE_PHOENIX_ANNOTATIONS"
"""A Phoenix base URL: write every online score there as a span annotation (docs/phoenix.md)."""
ENV_OUTPUT_PATH: Final = "GROUNDWIRE_OUTPUT_PATH"
"""The OTLP/JSON-lines file written when no OTLP endpoint is configured."""
ENV_PROMETHEUS_PORT: Final = "GROUNDWIRE_PROMETHEUS_PORT"
"""Serve the metrics for Prometheus scraping on this port (unset: no endpoint)."""
ENV_PROMETHEUS_HOST: Final = "GROUNDWIRE_PROMETHEUS_HOST"
"""Address the Prometheus endpoint binds (default 127.0.0.1)."""
ENV_INSTRUMENT: Final = "GROUNDWIRE_INSTRUMENT"
"""`true` (default), `false`, or comma-separated instrumentor names to enable."""
ENV_EXECUTOR: Final = "GROUNDWIRE_EXECUTOR"
"""Where sync evaluators run: `threads` (default) or `process` (one worker process)."""
ENV_GC_FREEZE: Final = "GROUNDWIRE_GC_FREEZE"
"""`true` (default) or `false`: end `configure()` with `gc.freeze()` (see docs/online.md)."""
ENV_SWITCH_INTERVAL: Final = "GROUNDWIRE_SWITCH_INTERVAL_S"
"""Seconds: the thread switch interval `configure()` sets (default 0.001; 0 leaves it alone)."""
ENV_EXIT_TIMEOUT: Final = "GROUNDWIRE_EXIT_TIMEOUT"
"""Seconds the exit hook may take to drain and export (default 3; see docs/online.md)."""
ENV_ENABLED: Final = "GROUNDWIRE_ENABLED"
"""Zero-code scoring under `opentelemetry-instrument`: `true` turns it on, `false` off (default:
on when `GROUNDWIRE_EVALUATORS` is set). See `groundwire.autoconfigure`."""

# --- LLM judges (groundedness, citation_support) ------------------------------------------------

ENV_JUDGE_MODEL: Final = "GROUNDWIRE_JUDGE_MODEL"
"""Judge model name (falls back to `OPENAI_MODEL`)."""
ENV_JUDGE_BASE_URL: Final = "GROUNDWIRE_JUDGE_BASE_URL"
"""Base URL of any OpenAI-compatible server (falls back to `OPENAI_BASE_URL`; unset: OpenAI)."""
ENV_JUDGE_API_KEY: Final = "GROUNDWIRE_JUDGE_API_KEY"
"""Judge API key (falls back to `OPENAI_API_KEY`)."""
ENV_JUDGE_TIMEOUT: Final = "GROUNDWIRE_JUDGE_TIMEOUT"
"""Per-call judge timeout in seconds (default 30)."""
ENV_JUDGE_MAX_CONCURRENCY: Final = "GROUNDWIRE_JUDGE_MAX_CONCURRENCY"
"""Judge calls in flight at once (default 8)."""
ENV_JUDGE_MAX_RETRIES: Final = "GROUNDWIRE_JUDGE_MAX_RETRIES"
"""Retries of one judge call on 429/5xx/timeouts (default 3)."""
ENV_JUDGE_CACHE: Final = "GROUNDWIRE_JUDGE_CACHE"
"""Judge reply cache: `memory` (default), `disk` or `off`."""
ENV_JUDGE_CACHE_DIR: Final = "GROUNDWIRE_JUDGE_CACHE_DIR"
"""Directory of the on-disk judge cache (setting it implies `disk`)."""
ENV_JUDGE_MODE: Final = "GROUNDWIRE_JUDGE_MODE"
"""Structured-output mode: `tools` (default), `json` or `md_json`."""

DETAIL_JUDGE_AGREEMENT: Final = "judge_agreement"
"""`Score.details` key of the groundedness judges' agreement in [0, 1] (1 - |r1 - r2| / 2);
the emitter records it as `groundwire.judge.agreement`. Absent when a judge gave no rating."""
DETAIL_JUDGE_MODEL: Final = "judge_model"
"""`Score.details` key of the judge model name (low-cardinality; usable as a metric attribute)."""
DETAIL_PROMPT_VERSION: Final = "prompt_version"
"""`Score.details` key of the judge prompts' hash (`groundwire.judge.prompt.version`)."""
LABEL_SKIPPED: Final = "skipped"
"""`Score.label` of a judge evaluator skipped because no judge is configured (value None);
runners count it under `groundwire.outcome=skipped`."""

# --- the OTLP gateway (`groundwire serve`) -------------------------------------------------------

METRIC_GATEWAY_RECEIVED: Final = "groundwire.gateway.received"
"""Counter of telemetry items (spans, metric data points, log records) accepted, by signal."""
METRIC_GATEWAY_FORWARDED: Final = "groundwire.gateway.forwarded"
"""Counter of items delivered downstream (acknowledged), by signal."""
METRIC_GATEWAY_RETRIED: Final = "groundwire.gateway.retried"
"""Counter of items sent downstream again after a retryable failure, by signal."""
METRIC_GATEWAY_DROPPED: Final = "groundwire.gateway.dropped"
"""Counter of accepted items that never reached downstream, by signal and drop reason."""
METRIC_GATEWAY_REFUSED: Final = "groundwire.gateway.refused"
"""Counter of requests answered with an error (the sender keeps or drops them), by reason."""
METRIC_GATEWAY_QUEUE_SIZE: Final = "groundwire.gateway.queue.size"
"""Observable gauge of requests waiting in the forward (retry) buffer."""
METRIC_GATEWAY_QUEUE_BYTES: Final = "groundwire.gateway.queue.bytes"
"""Observable gauge of bytes held in the forward (retry) buffer."""
METRIC_GATEWAY_QUEUE_CAPACITY: Final = "groundwire.gateway.queue.capacity"
"""Observable gauge of the forward buffer's size limit in bytes (`buffer_max_bytes`)."""
METRIC_GATEWAY_OPEN_TRACES: Final = "groundwire.gateway.traces.open"
"""Observable gauge of traces being grouped (waiting for their turn root and quiet period)."""
METRIC_GATEWAY_LATE_SPANS: Final = "groundwire.gateway.spans.late"
"""Counter of spans that arrived after their trace was scored (forwarded, not scored again)."""
METRIC_GATEWAY_NOT_SCORED: Final = "groundwire.gateway.spans.not_scored"
"""Counter of spans forwarded but left out of scoring, by reason (`scoring_queue_full`, ...)."""
METRIC_GATEWAY_EVICTED_TRACES: Final = "groundwire.gateway.traces.evicted"
"""Counter of traces closed early (scored as they stood) at the open-trace or memory bound."""
METRIC_GATEWAY_SCORING_LAG: Final = "groundwire.gateway.scoring.lag"
"""Histogram (s) from a trace's first span arriving to its turns being handed to the runner."""
METRIC_GATEWAY_DISK_BYTES: Final = "groundwire.gateway.queue.disk.bytes"
"""Gauge: request bytes held in the persistent forward queue (`queue_dir`)."""
METRIC_GATEWAY_DISK_RECORDS: Final = "groundwire.gateway.queue.disk.records"
"""Gauge: requests held in the persistent forward queue."""
METRIC_GATEWAY_REPLAYED: Final = "groundwire.gateway.queue.replayed"
"""Counter: requests read back from the persistent queue at start."""
METRIC_GATEWAY_CORRUPT: Final = "groundwire.gateway.queue.corrupt"
"""Counter: requests found damaged in the persistent queue (skipped)."""
METRIC_GATEWAY_QUEUED_RESULTS: Final = "groundwire.gateway.queue.results"
"""Counter: evaluation-result items (carrier spans, log records) committed to the persistent
queue, by `groundwire.signal`; from there they are forwarded like accepted requests."""
METRIC_GATEWAY_SCORED_TURNS: Final = "groundwire.gateway.turns.scored"
"""Counter: turns the gateway scored (evaluations finished)."""
GATEWAY_SIGNAL: Final = "groundwire.signal"
"""Attribute: `traces`, `metrics` or `logs`."""
GATEWAY_REASON: Final = "groundwire.reason"
"""Attribute: why items were dropped or a request refused (`buffer_full`, `expired`, ...)."""

ENV_GATEWAY_CONFIG: Final = "GROUNDWIRE_GATEWAY_CONFIG"
"""Path of the `groundwire serve` YAML configuration file. Every key of that file also has a
`GROUNDWIRE_GATEWAY_<KEY>` variable (upper case; nested keys joined by `_`), e.g.
`GROUNDWIRE_GATEWAY_FORWARD`, `GROUNDWIRE_GATEWAY_LISTEN`, `GROUNDWIRE_GATEWAY_AUTH_TOKEN`."""
