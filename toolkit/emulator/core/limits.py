"""The largest numbers the emulator keeps, so that no input reaches SQLite's limit.

SQLite stores integers up to 2**63 - 1; past that it raises `OverflowError`, which
used to surface as a 500. The spec sets no upper bound, so the emulator sets its own,
well inside SQLite's, and refuses anything larger with a 400 that names the bound:

- chapter and page numbers: 1 to 2,147,483,647 (a 32-bit integer, as many clients
  keep them). A chapter or page added without a number after one that holds the
  highest has no number left: that is a 409 saying to send a number;
- credits: 0 to 9,007,199,254,740,991 (2**53 - 1, the largest whole number every
  JSON reader keeps exactly, JavaScript's included).
"""

from __future__ import annotations

__all__ = ["MAX_CREDITS", "MAX_DIGITS", "MAX_POSITION"]

MAX_POSITION = 2**31 - 1
MAX_CREDITS = 2**53 - 1

# Longer digit strings are refused before `int()` sees them: Python refuses to convert
# more than 4,300 digits, and nothing that long can be under the bounds anyway.
MAX_DIGITS = 20
