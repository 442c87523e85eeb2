"""`PagePicker`: a file picker for page images whose order the user can change.

Files arrive in natural file-name order; "Up" and "Down" move the selected file. What
the panel sends is `PagePicker.uploads`, in the order shown. `check()` runs the client's
upload checks (`toolkit.client.uploads`) as soon as files are picked, so an SVG or a damaged
image is refused with the client's message before anything is sent.
"""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from toolkit.widgets._inputs import Upload, uploads_of


class PagePicker(widgets.VBox):
    def __init__(self, *, description: str = "Pages") -> None:
        self.upload = widgets.FileUpload(accept="image/*", multiple=True, description=description)
        self.order = widgets.Select(options=[], rows=5, description="Order")
        self.up = widgets.Button(description="Up", icon="arrow-up", layout={"width": "80px"})
        self.down = widgets.Button(description="Down", icon="arrow-down", layout={"width": "80px"})
        self.uploads: list[Upload] = []
        self._listeners: list[Callable[[], None]] = []
        super().__init__(
            [self.upload, widgets.HBox([self.order, widgets.VBox([self.up, self.down])])]
        )
        self.upload.observe(self._picked, names="value")
        self.up.on_click(lambda _: self.move(-1))
        self.down.on_click(lambda _: self.move(+1))
        self._show()

    def on_change(self, listener: Callable[[], None]) -> None:
        self._listeners.append(listener)

    @property
    def names(self) -> list[str]:
        return [upload.name for upload in self.uploads]

    def move(self, step: int) -> None:
        """Move the selected file `step` places (negative: towards the first page)."""
        index = self.order.value
        if index is None:
            return
        target = index + step
        if not 0 <= target < len(self.uploads):
            return
        files = self.uploads
        files[index], files[target] = files[target], files[index]
        self._show(selected=target)

    def check(self) -> None:
        """Refuse a bad file now, with the client's own checks, rather than when sending."""
        from toolkit.client import prepare_pages

        if self.uploads:
            with prepare_pages([upload.as_file() for upload in self.uploads]):
                pass

    def clear(self) -> None:
        self.upload.value = ()

    def _picked(self, _change: object) -> None:
        self.uploads = uploads_of(self.upload.value)
        self._show()

    def _show(self, *, selected: int | None = None) -> None:
        self.order.options = [
            (f"{i + 1}. {upload.name}", i) for i, upload in enumerate(self.uploads)
        ]
        self.order.value = selected
        self.order.layout.display = "" if self.uploads else "none"
        self.up.layout.display = self.down.layout.display = self.order.layout.display
        for listener in self._listeners:
            listener()
