"""A LlamaIndex RAG app with no groundwire code: a query engine answering two questions.

Run by the tests under `opentelemetry-instrument`. Its last stdout line is JSON: the answers.
"""

from __future__ import annotations

import json

from tests.dialects._apps import QUESTIONS
from tests.test_assembly_llamaindex import build_index, engine


def main() -> None:
    """Answer the questions with a query engine over the test corpus; print the answers."""
    query_engine = engine(build_index())
    answers = [str(query_engine.query(question)) for question in QUESTIONS]
    print(json.dumps({"answers": answers}))


if __name__ == "__main__":
    main()
