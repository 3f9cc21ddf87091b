"""Judged text is data, never instructions: wrap it in tags the text itself cannot close.

Any tag-like sequence in the text that names one of our delimiter tags (`<answer>`, `</answer >`,
`< / CONTEXT>`...) has its `<` replaced by `&lt;`, so the only real closing tag is ours. Nothing
else in the text changes, so verbatim quotes from it stay verbatim.
"""

from __future__ import annotations

import re

__all__ = ["DATA_TAGS", "data_block", "neutralise", "restore"]

DATA_TAGS = ("answer", "context", "contexts", "claim", "span", "document", "data")
"""Every tag name used to delimit judged text in our prompts."""

_TAG = re.compile(r"<(\s*/?\s*(?:" + "|".join(DATA_TAGS) + r")\b)", re.IGNORECASE)
_ESCAPED = re.compile(r"&lt;(\s*/?\s*(?:" + "|".join(DATA_TAGS) + r")\b)", re.IGNORECASE)


def neutralise(text: str) -> str:
    """Escape sequences in `text` that could open or close one of our delimiter tags."""
    return _TAG.sub(r"&lt;\1", text)


def restore(text: str) -> str:
    """Undo `neutralise` (for text a judge copied out of a delimited block)."""
    return _ESCAPED.sub(r"<\1", text)


def data_block(tag: str, text: str) -> str:
    """`<tag>` + neutralised text + `</tag>`, each on its own line."""
    if tag not in DATA_TAGS:
        raise ValueError(f"tag {tag!r} is not a registered delimiter tag; use one of {DATA_TAGS}")
    return f"<{tag}>\n{neutralise(text)}\n</{tag}>"
