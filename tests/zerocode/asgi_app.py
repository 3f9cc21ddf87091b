"""An ASGI endpoint answering with a LangChain RAG chain, with no groundwire code.

Served by a real uvicorn with `--workers 2` (a supervisor spawning worker processes) in the
tests: `GET /ask?q=...` returns the chain's answer and the serving worker's process id, as JSON.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs

from tests.dialects._apps import ANSWERS
from tests.test_assembly_langchain import rag_chain

CHAIN = rag_chain(list(ANSWERS))


async def app(
    scope: dict[str, Any],
    receive: Callable[[], Awaitable[dict[str, Any]]],
    send: Callable[[dict[str, Any]], Awaitable[None]],
) -> None:
    """Answer `q` with the chain (lifespan events are acknowledged and ignored)."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    query = parse_qs(scope.get("query_string", b"").decode())
    question = query.get("q", [""])[0]
    await asyncio.sleep(0.1)  # a request takes a while, so concurrent ones reach both workers
    answer = await CHAIN.ainvoke(question)
    body = json.dumps({"answer": answer, "pid": os.getpid()}).encode()
    headers = [(b"content-type", b"application/json")]
    await send({"type": "http.response.start", "status": 200, "headers": headers})
    await send({"type": "http.response.body", "body": body})
