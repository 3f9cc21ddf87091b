"""The bundled demo: a small corpus (a fictional library's handbook) and sample answers.

The answers quote their sources the way real models do: exactly, re-spaced, with a slip, with an
ellipsis, and sometimes quoting something the sources never said.
"""

from __future__ import annotations

from groundwire.demo._corpus import load_chunks, load_corpus
from groundwire.demo._samples import sample_turns

__all__ = ["load_chunks", "load_corpus", "sample_turns"]
