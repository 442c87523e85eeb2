from __future__ import annotations

from toolkit.emulator.core.pricing import novel_price, pages_price


def test_a_page_costs_one_credit_per_target_language():
    assert pages_price(20, 2) == 40
    assert pages_price(0, 3) == 0


def test_a_novel_costs_one_credit_per_started_2000_characters_per_language():
    assert novel_price(1, 2) == 2
    assert novel_price(2_000, 2) == 2
    assert novel_price(2_001, 2) == 4
    assert novel_price(200_000, 1) == 100
