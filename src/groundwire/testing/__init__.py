"""Public test doubles for apps that use groundwire (in the spirit of OTel's InMemorySpanExporter).

Real servers on loopback, not mocks: an HTTP server that speaks the OpenAI chat-completions
protocol with scripted replies, and an OTLP receiver that decodes what crossed the wire.
"""

from __future__ import annotations

__all__: list[str] = []
