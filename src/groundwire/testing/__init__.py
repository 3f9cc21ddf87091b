"""Public test doubles for apps that use groundwire (in the spirit of OTel's InMemorySpanExporter).

Real servers on loopback, not mocks: an HTTP server that speaks the OpenAI chat-completions
protocol with scripted replies, and an OTLP receiver that decodes what crossed the wire.
"""

from __future__ import annotations

from groundwire.testing._openai_replies import (
    RecordedRequest,
    Reply,
    ReplySource,
    chat_completion,
    structured,
)
from groundwire.testing._openai_server import OpenAIServer
from groundwire.testing._otlp_decode import (
    ReceivedEvent,
    ReceivedLink,
    ReceivedLogRecord,
    ReceivedMetricPoint,
    ReceivedSpan,
)
from groundwire.testing._otlp_grpc import OtlpGrpcReceiver
from groundwire.testing._otlp_http import OtlpHttpReceiver

__all__: list[str] = [
    "OpenAIServer",
    "OtlpGrpcReceiver",
    "OtlpHttpReceiver",
    "ReceivedEvent",
    "ReceivedLink",
    "ReceivedLogRecord",
    "ReceivedMetricPoint",
    "ReceivedSpan",
    "RecordedRequest",
    "Reply",
    "ReplySource",
    "chat_completion",
    "structured",
]
