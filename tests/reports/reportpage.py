"""Parse a rendered page into elements with their attributes, for checking data-* attributes."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    text: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())


class _Parser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[Element] = []
        self.open: list[Element] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        el = Element(tag, {k: v or "" for k, v in attrs})
        self.elements.append(el)
        if tag not in ("meta", "input", "br", "img", "link", "rect", "line", "path", "circle"):
            self.open.append(el)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append(Element(tag, {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.open) - 1, -1, -1):
            if self.open[i].tag == tag:
                del self.open[i:]
                break

    def handle_data(self, data: str) -> None:
        for el in self.open:
            el.text.append(data)


@dataclass
class Page:
    elements: list[Element]

    def find(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Element]:
        out = []
        for el in self.elements:
            if tag is not None and el.tag != tag:
                continue
            if cls is not None and cls not in el.classes:
                continue
            if all(el.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items()):
                out.append(el)
        return out

    def text(self, tag: str) -> str:
        return "".join(t for el in self.find(tag) for t in el.text)

    def per_scenario(self, tag: str, cls: str | None = None) -> dict[str, list[Element]]:
        """The index page's elements `tag` (of class `cls`), by the scenario whose section holds them."""
        found: dict[str, list[Element]] = {}
        scenario = None
        for el in self.elements:
            if el.tag == "section" and "scenario" in el.classes:
                scenario = el.attrs["data-scenario"]
            elif scenario is not None and el.tag == tag and (cls is None or cls in el.classes):
                found.setdefault(scenario, []).append(el)
        return found


def parse(html: str) -> Page:
    parser = _Parser()
    parser.feed(html)
    parser.close()
    return Page(parser.elements)
