from __future__ import annotations

import subprocess
import sys

import toolkit


def test_all_is_sorted_and_every_public_name_resolves():
    assert toolkit.__all__ == sorted(toolkit.__all__)
    missing = [name for name in toolkit.__all__ if getattr(toolkit, name, None) is None]
    assert missing == []


def test_import_stays_light():
    # `import toolkit` must not pull in pandas, pyarrow or matplotlib: notebooks and the
    # command start quickly and only pay for what they use.
    code = (
        "import sys, toolkit; "
        "print(sorted(m for m in ('pandas', 'pyarrow', 'matplotlib', 'httpx') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
