"""The checks of an admin body's numbers, each a 400 that names the field and its range.

The fault settings and the chaos rules read the same kinds of number (a rate, a whole
number within bounds), so each kind is checked, and refused, in one way.
"""

from __future__ import annotations

from typing import Any

from toolkit.emulator.routes.errors import EmulatorError

__all__ = ["rate_field", "whole_field"]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def rate_field(value: Any, name: str) -> float:
    """A number from 0 to 1; a 400 naming `name` otherwise."""
    if not _is_number(value) or not 0 <= value <= 1:
        raise EmulatorError(400, f"{name} must be a number from 0 to 1, not {value!r}")
    return float(value)


def whole_field(
    value: Any, name: str, *, minimum: int | None = 0, maximum: int | None = None
) -> int:
    """A whole number within the bounds given (None: unbounded that side); a 400 naming
    `name` and the bounds otherwise. A boolean is not a number."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if ok and minimum is not None and value < minimum:
        ok = False
    if ok and maximum is not None and value > maximum:
        ok = False
    if not ok:
        bounds = f" from {minimum} to {maximum}" if maximum is not None else ""
        raise EmulatorError(400, f"{name} must be a whole number{bounds}, not {value!r}")
    return int(value)
