"""A panel's message area, and the sentences it shows for errors.

ipywidgets swallows an exception raised in a button callback (it only logs it), so every
action a panel runs goes through `Feedback.run`, which turns the exception into a
readable message in the panel itself. Nothing reaches the user as a traceback; the
traceback is kept at DEBUG level on the `toolkit.widgets` logger for whoever debugs.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Callable
from typing import Any, Literal

import ipywidgets as widgets

from toolkit.errors import (
    ApiError,
    AuthenticationError,
    BadRequest,
    Conflict,
    InsufficientCredits,
    InvalidUpload,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServerError,
    TransportError,
    Unprocessable,
    UnsupportedMediaType,
    WaitTimeout,
)

log = logging.getLogger("toolkit.widgets")

Tone = Literal["info", "success", "warning", "error"]
_COLOURS: dict[Tone, tuple[str, str]] = {
    "info": ("#1d4ed8", "#eff6ff"),
    "success": ("#15803d", "#f0fdf4"),
    "warning": ("#a16207", "#fefce8"),
    "error": ("#b91c1c", "#fef2f2"),
}

# (class, headline, what to do); the first class that matches wins, so subclasses first.
_ADVICE: list[tuple[type[BaseException], str, str]] = [
    (InvalidUpload, "Refused before sending", "Fix or remove the file and try again."),
    (
        InsufficientCredits,
        "Not enough credits",
        "Add credits to the workspace, or send fewer pages, then try again.",
    ),
    (Conflict, "Conflict", "Refresh the panel, wait for running chapters, then try again."),
    (NotFound, "Not found", "It may be in the trash or in another workspace; refresh the panel."),
    (PayloadTooLarge, "File too large", "Send a smaller image or shorter text."),
    (UnsupportedMediaType, "Unsupported file type", "Send PNG, JPEG or WebP pages."),
    (Unprocessable, "The service could not open a file", "Check that the file is not damaged."),
    (BadRequest, "The service refused the request", "Check the inputs and try again."),
    (AuthenticationError, "The API key was refused", "Check CTS_API_KEY."),
    (RateLimited, "Too many requests", "Wait a moment and try again."),
    (ServerError, "The service failed", "Try again in a few minutes."),
    (TransportError, "Could not reach the service", "Check the network and CTS_BASE_URL."),
    (WaitTimeout, "Timed out", "The run is still going; refresh later."),
]


def describe(exc: BaseException) -> str:
    """One readable paragraph for an exception: what went wrong and what to do."""
    for cls, headline, advice in _ADVICE:
        if isinstance(exc, cls):
            status = f" ({exc.status})" if isinstance(exc, ApiError) else ""
            return f"{headline}{status}: {exc} {advice}"
    if isinstance(exc, ApiError):
        return f"The service answered {exc.status}: {exc}"
    return f"Unexpected error ({type(exc).__name__}): {exc}"


class Feedback(widgets.HTML):
    """The message area of a panel: one or more lines in one tone."""

    def __init__(self) -> None:
        super().__init__(value="")
        self.text = ""
        self.tone: Tone | None = None

    def show(self, text: str, tone: Tone = "info") -> None:
        self.text, self.tone = text, tone
        fg, bg = _COLOURS[tone]
        body = "<br>".join(html.escape(line, quote=False) for line in text.splitlines())
        self.value = (
            f'<div class="tk-message tk-{tone}" style="color:{fg};background:{bg};'
            f'padding:6px 10px;border-radius:4px">{body}</div>'
        )

    def clear(self) -> None:
        self.text, self.tone, self.value = "", None, ""

    def error(self, exc: BaseException) -> None:
        log.debug("panel action failed", exc_info=exc)
        self.show(describe(exc), "error")

    def run(self, action: Callable[[], Any], *, busy: widgets.Button | None = None) -> Any:
        """Run `action`, showing any exception here; `busy` is disabled meanwhile.

        Disabling the button stops a second click from sending (and paying) twice.
        """
        if busy is not None:
            busy.disabled = True
        try:
            return action()
        except Exception as exc:
            self.error(exc)
            return None
        finally:
            if busy is not None:
                busy.disabled = False

    def check(self, action: Callable[[], Any]) -> bool:
        """Run a check: show its refusal, or clear an earlier error once it passes."""
        try:
            action()
        except Exception as exc:
            self.error(exc)
            return False
        if self.tone == "error":
            self.clear()
        return True

    def on_click(self, button: widgets.Button, action: Callable[[], Any]) -> None:
        """Wire a button to `action` through `run`."""
        button.on_click(lambda _: self.run(action, busy=button))
