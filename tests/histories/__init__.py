"""Histories no one wrote by hand: a seed draws an emulator scenario (`plan`), plays it
into a snapshot store (`play`), and every surface is run on the store and checked
against the emulator's ledger (`checks`). `python -m tests.histories --seeds N` runs N
seeds from the checkout; tests/analysis/test_seeded_histories.py runs CI's fixed list.
"""
