"""A LangChain RAG app with no groundwire code: an LCEL chain answering two questions.

Run by the tests under `opentelemetry-instrument`; `--configure-too` makes it also call
`groundwire.configure()` itself (which must then replace the zero-code configuration). Its last
stdout line is JSON: the answers, and the active configuration's stats when there is one.
"""

from __future__ import annotations

import json
import sys

from tests.dialects._apps import ANSWERS, QUESTIONS
from tests.test_assembly_langchain import rag_chain


def main() -> None:
    """Answer the questions; print what the app got and what groundwire says it scored."""
    online = None
    if "--configure-too" in sys.argv:
        import groundwire

        online = groundwire.configure(evaluators=["quoted_spans"], instrument=False)
    chain = rag_chain(list(ANSWERS))
    answers = [chain.invoke(question) for question in QUESTIONS]
    result: dict[str, object] = {"answers": answers}
    if online is not None:
        import groundwire

        groundwire.force_flush(10.0)
        stats = online.stats()
        result.update(scored=stats.scored, submitted=stats.submitted)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
