"""Built-in evaluators and their batch functions.

Names are imported lazily (on first attribute access) so that `import groundwire` stays light:
the judge, eRAG and embedding dependencies load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS: dict[str, str] = {
    # public name -> module that defines it
    "QuoteVerification": "groundwire.evaluators.quote_verification",
    "QuoteMatch": "groundwire.evaluators.quote_verification",
    "QuoteStats": "groundwire.evaluators.quote_verification",
    "verify_quotes": "groundwire.evaluators.quote_verification",
    "quote_stats": "groundwire.evaluators.quote_verification",
    "write_stats_csv": "groundwire.evaluators.quote_verification",
    "write_quotes_xlsx": "groundwire.evaluators.quote_verification",
    "ResponseGroundedness": "groundwire.evaluators.groundedness",
    "CitationSupport": "groundwire.evaluators.citation_support",
    "CitationVerdict": "groundwire.evaluators.citation_support",
    "audit_citation": "groundwire.evaluators.citation_support",
    "aaudit_citation": "groundwire.evaluators.citation_support",
    "ERAG": "groundwire.evaluators.erag",
    "erag_score": "groundwire.evaluators.erag",
    "aerag_score": "groundwire.evaluators.erag",
    "score_relevance_labels": "groundwire.evaluators.erag",
    "exact_match": "groundwire.evaluators.erag",
    "token_f1": "groundwire.evaluators.erag",
    "contains": "groundwire.evaluators.erag",
    "rouge_l": "groundwire.evaluators.erag",
    "batchify_text_generator": "groundwire.evaluators.erag",
    "batchify_downstream_metric": "groundwire.evaluators.erag",
    "BatchedGenerator": "groundwire.evaluators.erag",
    "FunctionGenerator": "groundwire.evaluators.erag",
    "LangChainGenerator": "groundwire.evaluators.erag",
    "LlamaIndexGenerator": "groundwire.evaluators.erag",
    "OpenAIGenerator": "groundwire.evaluators.erag",
    "attach_expected": "groundwire.evaluators.erag",
    "load_expected": "groundwire.evaluators.erag",
    "Quote": "groundwire.evaluators.quoted_spans",
    "QuotedSpans": "groundwire.evaluators.quoted_spans",
    "find_quotes": "groundwire.evaluators.quoted_spans",
    "quoted_spans_alignment": "groundwire.evaluators.quoted_spans",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'groundwire.evaluators' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
