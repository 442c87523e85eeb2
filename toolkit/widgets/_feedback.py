"""A panel's message area and its action buttons.

ipywidgets swallows an exception raised in a button callback (it only logs it), so every
action a panel runs goes through `Feedback.run`, which shows the exception as a message
in the panel itself; the traceback is kept at DEBUG level on the `toolkit.widgets`
logger for whoever debugs.

Messages show the error's own words and add nothing they already say: an error from the
service is told in its plain `reason` and `advice` (`toolkit.errors.in_plain_words`),
after a headline in the panel's terms ("Chapter 10 was not created in Moonlit Harbor");
any other error (a file refused before sending, a panel's own check) by its message.

Buttons: while an action runs, every action button of the panel is disabled and the one
pressed says what it is doing. Afterwards each button is enabled only when its form has
something to do (`ready`), so the second click of a double click, which the kernel
receives after the first action ended, finds the button disabled and is ignored: the
first result stays until the next real action.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import ipywidgets as widgets

from toolkit.errors import ApiError, InvalidUpload, TransportError, in_plain_words

log = logging.getLogger("toolkit.widgets")

Tone = Literal["info", "success", "warning", "error"]
_COLOURS: dict[Tone, tuple[str, str]] = {
    "info": ("#1d4ed8", "#eff6ff"),
    "success": ("#15803d", "#f0fdf4"),
    "warning": ("#a16207", "#fefce8"),
    "error": ("#b91c1c", "#fef2f2"),
}


def error_message(exc: BaseException, *, doing: str | None = None) -> str:
    """One readable paragraph for an exception, under the panel's headline `doing`."""
    if isinstance(exc, ApiError | TransportError):
        said = in_plain_words(exc)
        return f"{doing}: {said[:1].lower()}{said[1:]}" if doing else said
    if isinstance(exc, InvalidUpload):
        return str(exc)  # it names the file or the input, as the person chose it
    return f"Unexpected error ({type(exc).__name__}): {exc}"


@dataclass
class _Action:
    button: widgets.Button
    ready: Callable[[], bool]
    idle: tuple[str, str]


class Feedback(widgets.HTML):
    """The message area of a panel: one or more lines in one tone, about one form."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.text = ""
        self.tone: Tone | None = None
        self.owner: object = None
        self.busy = False
        self._actions: list[_Action] = []
        self._aside: dict[int, tuple[str, Tone]] = {}  # id(owner) -> its hidden message

    def show(self, text: str, tone: Tone = "info", *, owner: object = None) -> None:
        self.text, self.tone, self.owner = text, tone, owner
        self._aside.pop(id(owner), None)  # this form's newer message replaces a hidden one
        fg, bg = _COLOURS[tone]
        body = "<br>".join(html.escape(line, quote=False) for line in text.splitlines())
        self.value = (
            f'<div class="tk-message tk-{tone}" style="color:{fg};background:{bg};'
            f'padding:6px 10px;border-radius:4px;white-space:normal">{body}</div>'
        )

    def clear(self) -> None:
        self.text, self.tone, self.owner, self.value = "", None, None, ""

    def error(self, exc: BaseException, *, doing: str | None = None, owner: object = None) -> None:
        log.debug("panel action failed", exc_info=exc)
        self.show(error_message(exc, doing=doing), "error", owner=owner)

    def forget(self, owner: object) -> None:
        """`owner`'s inputs changed: a refusal or warning about them no longer applies."""
        kept = self._aside.get(id(owner))
        if kept is not None and kept[1] in ("error", "warning"):
            del self._aside[id(owner)]
        if self.owner is owner and self.tone in ("error", "warning"):
            self.clear()

    def switch(self, shown: object, forms: Sequence[object]) -> None:
        """Another form (a tab) is shown: a message about one of the others is set aside,
        and the one about `shown`, if any was set aside, comes back. A message of the
        whole panel (no form) stays."""
        if (
            self.tone is not None
            and self.owner is not shown
            and any(self.owner is form for form in forms)
        ):
            self._aside[id(self.owner)] = (self.text, self.tone)
            self.clear()
        kept = self._aside.pop(id(shown), None)
        if kept is not None and self.tone is None:
            self.show(*kept, owner=shown)

    def run(
        self,
        action: Callable[[], Any],
        *,
        doing: Callable[[], str] | str | None = None,
        owner: object = None,
    ) -> Any:
        """Run `action`, showing any exception here under the headline `doing`."""
        try:
            return action()
        except Exception as exc:
            headline = doing() if callable(doing) else doing
            self.error(exc, doing=headline, owner=owner)
            return None

    def check(self, action: Callable[[], Any], *, owner: object = None) -> bool:
        """Run a check: show its refusal, or clear an earlier one of `owner` once it passes."""
        try:
            action()
        except Exception as exc:
            self.error(exc, owner=owner)
            return False
        self.forget(owner)
        return True

    # -- action buttons ------------------------------------------------------------------

    def on_click(
        self,
        button: widgets.Button,
        action: Callable[[], Any],
        *,
        working: str,
        ready: Callable[[], bool] = lambda: True,
        doing: Callable[[], str] | str | None = None,
        owner: object = None,
    ) -> None:
        """Wire `button` to `action`: disabled while any action runs and while not `ready`."""
        entry = _Action(button, ready, (button.description, button.icon))
        self._actions.append(entry)

        def clicked(_: object) -> None:
            if self.busy or button.disabled:
                return  # a click queued behind the action it would repeat
            self._busy(entry, working)
            try:
                self.run(action, doing=doing, owner=owner)
            finally:
                self._idle(entry)

        button.on_click(clicked)
        self.update_buttons()

    def update_buttons(self) -> None:
        """Enable each action button whose form has something to do (none while busy)."""
        for entry in self._actions:
            entry.button.disabled = self.busy or not _safely(entry.ready)

    def _busy(self, entry: _Action, working: str) -> None:
        self.busy = True
        self.update_buttons()
        entry.button.description, entry.button.icon = working, "spinner"

    def _idle(self, entry: _Action) -> None:
        entry.button.description, entry.button.icon = entry.idle
        self.busy = False
        self.update_buttons()


def _safely(ready: Callable[[], bool]) -> bool:
    try:
        return bool(ready())
    except Exception:  # a readiness test never breaks the panel; the action will explain
        log.debug("readiness check failed", exc_info=True)
        return True
