"""A parsed HTML page as a reader sees it (importable from any test directory)."""

from __future__ import annotations

from html.parser import HTMLParser


class Page(HTMLParser):
    """What a reader sees of the page: texts, table rows, images and any outside link."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self.items: list[str] = []
        self.images: list[str] = []
        self.texts: list[str] = []  # each paragraph's text
        self.headings: list[str] = []  # h1-h3, in order
        self.outside: list[str] = []
        self.title = ""
        self._tag, self._cell = "", ""
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        self._tag = tag
        if tag == "tr":
            self.rows.append([])
        if tag in ("td", "th", "li", "p", "h1", "h2", "h3"):
            self._cell = ""
        if tag == "img":
            self.images.append(attributes["src"])
        for name in ("src", "href"):
            # A `#fragment` is a place in the same page (the drill-down), not outside it.
            if name in attributes and not attributes[name].startswith(("data:", "#")):
                self.outside.append(attributes[name])
        if tag in ("link", "script", "iframe"):
            self.outside.append(tag)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.rows[-1].append(self._cell.strip())
        if tag == "li":
            self.items.append(self._cell.strip())
        if tag == "p":
            self.texts.append(self._cell.strip())
        if tag in ("h1", "h2", "h3"):
            self.headings.append(self._cell.strip())

    def handle_data(self, data):
        self._cell += data
        if self._tag == "title":
            self.title += data
