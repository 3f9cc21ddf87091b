"""A WSGI endpoint answering with a LangChain RAG chain, with no groundwire code.

Served by a real gunicorn (pre-fork: a master and its workers) in the tests: `GET /ask?q=...`
returns the chain's answer and the serving worker's process id, as JSON.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from tests.dialects._apps import ANSWERS
from tests.test_assembly_langchain import rag_chain

CHAIN = rag_chain(list(ANSWERS))


def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """Answer `q` with the chain."""
    question = parse_qs(environ.get("QUERY_STRING", "")).get("q", [""])[0]
    time.sleep(0.1)  # a request takes a while, so concurrent ones reach both workers
    body = json.dumps({"answer": CHAIN.invoke(question), "pid": os.getpid()}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]
