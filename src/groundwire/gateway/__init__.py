"""`groundwire serve`: an OTLP gateway that forwards every signal unchanged and adds the scores.

```
app / Collector --OTLP--> groundwire serve --OTLP (unchanged + evaluation results)--> Collector
```

It receives OTLP/HTTP (protobuf or JSON, gzip) and OTLP/gRPC for traces, metrics and logs,
forwards each request downstream first and always (a bounded retry buffer rides out outages),
groups spans by trace, scores the RAG turns it finds with the same runner as in-process scoring,
and sends the evaluation carrier spans, result events and metrics to the same downstream.
With `queue_dir` every accepted request is on disk (SQLite, WAL) before it is answered, and a
restarted gateway forwards, and scores, what an earlier one left.

```python
from groundwire.gateway import Gateway, load_config

config = load_config(flags={"forward": "http://collector:4318", "evaluators": "quoted_spans"})
asyncio.run(Gateway(config).run())
```

Options, variables and deployment: docs/gateway.md.
"""

from __future__ import annotations

from groundwire.gateway._config import ConfigError, GatewayConfig, load_config
from groundwire.gateway._server import Gateway, ShutdownReport

__all__ = ["ConfigError", "Gateway", "GatewayConfig", "ShutdownReport", "load_config"]
