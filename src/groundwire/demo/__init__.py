"""The bundled demo: a fictional library's handbook, sample answers, and a LangChain RAG app.

`load_corpus()`, `load_chunks()` and `sample_turns()` need nothing but groundwire. The sample
answers quote their sources the way real models do: exactly, re-spaced, with a slip, with an
ellipsis, and sometimes quoting something the sources never said.

`run_demo()` (what `groundwire demo` runs) answers questions with a LangChain app
(`groundwire.demo.app`: a BM25 retriever, a prompt and a chat model, by default the
`OfflineStandInChatModel`), scores them online and re-scores the trace file offline. LangChain
is imported only when the app is built. See docs/demo.md.
"""

from __future__ import annotations

from groundwire.demo._corpus import load_chunks, load_corpus
from groundwire.demo._questions import QUESTIONS
from groundwire.demo._run import (
    DEFAULT_OUT,
    DEFAULT_QUESTIONS,
    DEMO_EVALUATORS,
    DemoError,
    DemoRun,
    run_demo,
)
from groundwire.demo._samples import sample_turns

__all__ = [
    "DEFAULT_OUT",
    "DEFAULT_QUESTIONS",
    "DEMO_EVALUATORS",
    "QUESTIONS",
    "DemoError",
    "DemoRun",
    "load_chunks",
    "load_corpus",
    "run_demo",
    "sample_turns",
]
