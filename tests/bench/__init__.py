"""Benchmarks (issue 7), kept out of the test suite: `python -m tests.bench`; see README.md."""
