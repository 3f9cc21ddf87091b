"""LLM judges over any OpenAI-compatible server: configuration, client, cache, prompt hygiene.

The judge evaluators (`groundedness`, `citation_support`) build on this package. Configure the
judge with `JudgeConfig(...)` or the environment (`GROUNDWIRE_JUDGE_MODEL`,
`GROUNDWIRE_JUDGE_BASE_URL`, `GROUNDWIRE_JUDGE_API_KEY`, falling back to `OPENAI_MODEL`,
`OPENAI_BASE_URL`, `OPENAI_API_KEY`; see docs/judges.md for every variable). With none set, the
judge evaluators return a skipped score (value None, label `skipped`) instead of failing.

Importing this package does not import openai or instructor; the first judge call does.
"""

from __future__ import annotations

from groundwire.judges._attempts import Asked, ask_until_valid
from groundwire.judges._audit import (
    FLAG_PASSES_DISAGREE,
    FLAG_PHRASE_NOT_IN_SPAN,
    VERDICT_ORDER,
    CitationVerdict,
    aaudit_citation,
    audit_citation,
    audit_pair,
)
from groundwire.judges._cache import DiskCache, MemoryCache, ResponseCache, cache_key
from groundwire.judges._claims import split_claims
from groundwire.judges._client import (
    InvalidJudgeOutputError,
    JudgeCallError,
    JudgeClient,
    JudgeError,
    JudgeReply,
    Usage,
)
from groundwire.judges._config import NOT_CONFIGURED_MESSAGE, CacheKind, JudgeConfig, JudgeMode
from groundwire.judges._delimit import data_block, neutralise
from groundwire.judges._prompts import (
    CITATION_PROMPT_HASH,
    GROUNDEDNESS_PROMPT_HASH,
    GROUNDEDNESS_PROMPT_VERSIONS,
    GroundednessRating,
    groundedness_messages,
    prompt_hash,
)
from groundwire.judges._resolve import (
    JudgeNotConfiguredError,
    resolve_judge,
    shared_judge,
    skipped_score,
)

__all__ = [
    "CITATION_PROMPT_HASH",
    "FLAG_PASSES_DISAGREE",
    "FLAG_PHRASE_NOT_IN_SPAN",
    "GROUNDEDNESS_PROMPT_HASH",
    "GROUNDEDNESS_PROMPT_VERSIONS",
    "NOT_CONFIGURED_MESSAGE",
    "VERDICT_ORDER",
    "Asked",
    "CacheKind",
    "CitationVerdict",
    "DiskCache",
    "GroundednessRating",
    "InvalidJudgeOutputError",
    "JudgeCallError",
    "JudgeClient",
    "JudgeConfig",
    "JudgeError",
    "JudgeMode",
    "JudgeNotConfiguredError",
    "JudgeReply",
    "MemoryCache",
    "ResponseCache",
    "Usage",
    "aaudit_citation",
    "ask_until_valid",
    "audit_citation",
    "audit_pair",
    "cache_key",
    "data_block",
    "groundedness_messages",
    "neutralise",
    "prompt_hash",
    "resolve_judge",
    "shared_judge",
    "skipped_score",
    "split_claims",
]
