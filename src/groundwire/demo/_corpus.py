"""Load the bundled corpus as whole documents or as paragraph chunks (what a retriever returns)."""

from __future__ import annotations

from importlib import resources

from groundwire._types import Context

_PACKAGE = "groundwire.demo"


def load_corpus() -> dict[str, str]:
    """Document name (file stem) -> text, in name order."""
    folder = resources.files(_PACKAGE).joinpath("corpus")
    documents = {
        entry.name.removesuffix(".txt"): entry.read_text(encoding="utf-8")
        for entry in folder.iterdir()
        if entry.name.endswith(".txt")
    }
    return dict(sorted(documents.items()))


def load_chunks() -> list[Context]:
    """Every paragraph of every document as a Context with id `<document>#<paragraph>`."""
    chunks: list[Context] = []
    for name, text in load_corpus().items():
        paragraphs = [part.strip() for part in text.split("\n\n") if part.strip()]
        for index, paragraph in enumerate(paragraphs):
            chunks.append(Context(text=paragraph, id=f"{name}#{index}", metadata={"source": name}))
    return chunks
