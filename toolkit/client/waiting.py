"""Waiting for a chapter's run to end: polling with backoff, a deadline, progress bars.

The polling schedule and what a wait returns are in docs/client.md ("Waiting").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from toolkit.client.flows import Flow, Sleep, get_chapter
from toolkit.client.retry import RetryPolicy
from toolkit.errors import WaitTimeout
from toolkit.models import ChapterDetail

__all__ = ["wait_for_chapter"]

_GROWTH = 1.5


def wait_for_chapter(
    chapter_id: str,
    policy: RetryPolicy,
    *,
    timeout: float | None,
    poll_interval: float,
    max_interval: float,
    monotonic: Callable[[], float],
    progress: bool = False,
    on_poll: Callable[[ChapterDetail], object] | None = None,
) -> Flow[ChapterDetail]:
    """The flow that polls a chapter until it settles, or `timeout` seconds pass."""
    if timeout is not None and timeout < 0:
        raise ValueError(f"timeout must be 0 or more seconds (or None), not {timeout}")
    if poll_interval < 0 or max_interval < poll_interval:
        raise ValueError(
            f"need 0 <= poll_interval <= max_interval, got {poll_interval} and {max_interval}"
        )
    start = monotonic()
    bars = _LanguageBars() if progress else None
    interval = poll_interval
    try:
        while True:
            detail = yield from get_chapter(chapter_id, policy)
            if bars is not None:
                bars.update(detail)
            if not detail.processing:
                return detail
            elapsed = monotonic() - start
            if timeout is not None and elapsed >= timeout:
                raise WaitTimeout(_timeout_message(chapter_id, timeout, detail), last=detail)
            if on_poll is not None:
                on_poll(detail)
            pause = interval if timeout is None else min(interval, timeout - elapsed)
            yield Sleep(max(0.0, pause))
            interval = min(max_interval, interval * _GROWTH)
    finally:
        if bars is not None:
            bars.close()


def _describe_chapter(detail: ChapterDetail) -> str:
    """The state of a chapter in a few words, for messages."""
    parts = [f"status {detail.status}"]
    if detail.detecting:
        parts.append("reading pages")
    left = ", ".join(f"{lang.language_code} {lang.untranslated}" for lang in detail.languages)
    if left:
        parts.append(f"untranslated lines: {left}")
    if detail.failed:
        parts.append(f"failed: {detail.failure_reason or 'no reason given'}")
    return "; ".join(parts)


def _timeout_message(chapter_id: str, timeout: float, detail: ChapterDetail) -> str:
    return (
        f"chapter {chapter_id!r} is still processing after {timeout:g} s "
        f"({_describe_chapter(detail)}); "
        "call wait_for_chapter again to keep waiting, or pass a longer timeout="
    )


class _LanguageBars:
    """One progress bar per language: lines translated out of lines to translate."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def update(self, detail: ChapterDetail) -> None:
        for lang in detail.languages:
            if lang.untranslated is None:
                continue
            bar = self._bars.get(lang.language_code)
            if bar is None:
                bar = self._bars[lang.language_code] = self._new(lang.language_code)
            # Lines can appear after the first poll (pages still being read): grow the
            # total so that what was already counted as done stays done.
            bar.total = max(bar.total, bar.n + lang.untranslated)
            bar.n = bar.total - lang.untranslated
            bar.set_postfix_str(str(lang.status or ""), refresh=False)
            bar.refresh()

    @staticmethod
    def _new(code: str) -> Any:
        from tqdm.auto import tqdm

        return tqdm(total=0, desc=code, unit="line", leave=True)

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()
