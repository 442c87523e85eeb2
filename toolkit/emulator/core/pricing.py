"""The price of a run (DESIGN.md), the one place the emulator computes it.

1 credit per page per target language; a novel costs 1 credit per started 2,000
characters per target language. Charged when a run starts, never refunded.
"""

from __future__ import annotations

import math

__all__ = ["novel_price", "pages_price"]

_NOVEL_CHARACTERS_PER_CREDIT = 2_000


def pages_price(pages: int, languages: int) -> int:
    """Credits for running `pages` pages into `languages` target languages."""
    return pages * languages


def novel_price(characters: int, languages: int) -> int:
    """Credits for translating a novel chapter of `characters` characters."""
    return math.ceil(characters / _NOVEL_CHARACTERS_PER_CREDIT) * languages
