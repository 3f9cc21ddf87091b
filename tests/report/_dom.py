"""Reading the HTML report's structure (for tests without a browser and for the browser's DOM)."""

from __future__ import annotations

from html.parser import HTMLParser

__all__ = ["ReportDom", "parse"]


class ReportDom(HTMLParser):
    """The parts of a report the tests check: quote marks, legend, skipped notes, charts, links."""

    def __init__(self) -> None:
        super().__init__()
        self.answer_marks: list[tuple[str, str | None, str]] = []
        """(class, data-state, text) of each mark in an answer."""
        self.context_marks: list[tuple[str, str]] = []
        """(class, text) of each mark in a context."""
        self.legend_states: list[str] = []
        self.skipped: list[str] = []
        """data-skipped of each skipped note (the evaluators it names)."""
        self.figures: list[str] = []
        """Each chart's caption."""
        self.svg_rects: list[int] = []
        """Bars per chart."""
        self.external: list[str] = []
        self.tags: list[str] = []
        self._where: list[str] = []
        self._mark: tuple[str, str | None] | None = None
        self._text: list[str] = []
        self._caption = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        css = found.get("class") or ""
        for key in ("src", "href", "srcset", "action"):
            if found.get(key):
                self.external.append(str(found[key]))
        if tag in ("script", "link", "img", "iframe", "object", "embed"):
            self.external.append(tag)
        if tag == "div" and css.startswith("text "):
            self._where.append(css.split()[1])
        elif tag == "div":
            self._where.append("")
        if tag == "mark":
            self._mark, self._text = (css, found.get("data-state")), []
        if tag == "li" and found.get("data-state") and self._in_legend():
            self.legend_states.append(str(found["data-state"]))
        if tag == "p" and "skipped" in css.split():
            self.skipped.append(str(found.get("data-skipped")))
        if tag == "aside":
            self._where.append("legend")
        if tag == "figcaption":
            self._caption = True
        if tag == "svg":
            self.svg_rects.append(0)
        if tag == "rect" and self.svg_rects:
            self.svg_rects[-1] += 1
        if tag == "span" and css.startswith("tag"):
            self.tags.append(css)

    def _in_legend(self) -> bool:
        return "legend" in self._where

    def handle_endtag(self, tag: str) -> None:
        if tag in ("div", "aside") and self._where:
            self._where.pop()
        if tag == "mark" and self._mark is not None:
            css, state = self._mark
            text = "".join(self._text)
            where = self._where[-1] if self._where else ""
            if where == "answer":
                self.answer_marks.append((css, state, text))
            elif where == "context":
                self.context_marks.append((css, text))
            self._mark = None

    def handle_data(self, data: str) -> None:
        if self._mark is not None:
            self._text.append(data)
        if self._caption:
            self.figures.append(data)
            self._caption = False


def parse(html: str) -> ReportDom:
    """The report's structure."""
    dom = ReportDom()
    dom.feed(html)
    return dom
