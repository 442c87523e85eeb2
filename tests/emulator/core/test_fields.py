"""The admin body's numbers are checked one way for the faults and the chaos rules."""

from __future__ import annotations

import pytest

from toolkit.emulator.core.fields import rate_field, whole_field
from toolkit.emulator.routes.errors import EmulatorError


@pytest.mark.parametrize("value", [0, 0.25, 1])
def test_a_rate_is_a_number_from_0_to_1(value):
    assert rate_field(value, "errorRate") == value


@pytest.mark.parametrize("value", [-0.1, 1.5, True, "0.5", None])
def test_anything_else_is_refused_naming_the_field(value):
    with pytest.raises(EmulatorError, match=r"errorRate must be a number from 0 to 1"):
        rate_field(value, "errorRate")


def test_a_whole_number_is_checked_against_the_bounds_given():
    assert whole_field(599, "status", minimum=400, maximum=599) == 599
    with pytest.raises(EmulatorError, match=r"status must be a whole number from 400 to 599"):
        whole_field(600, "status", minimum=400, maximum=599)
    with pytest.raises(EmulatorError, match=r"count must be a whole number from 1 to 10"):
        whole_field(True, "count", minimum=1, maximum=10)  # a boolean is not a number


def test_unbounded_sides_take_any_whole_number():
    assert whole_field(-(2**70), "seed", minimum=None) == -(2**70)
    with pytest.raises(EmulatorError, match=r"^seed must be a whole number, not 1.5$"):
        whole_field(1.5, "seed", minimum=None)
