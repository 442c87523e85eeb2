"""numpy's huge-page advice, turned off for the `toolkit` command's own process.

On Linux numpy advises the kernel to back every array of 4 MiB or more with huge pages
(`madvise(MADV_HUGEPAGE)`). Where the kernel then compacts memory to find them before a
page is handed over (`/sys/kernel/mm/transparent_hugepage/defrag` set to `madvise`, the
default of common distributions), a new process's first large arrays can wait on it for
seconds (numpy issue 31590). Measured at 100,000 chapters x a year (docs/store.md,
"Where one machine ends"): the weekly page in a new process took 7.95-10.4 s with the
advice and 7.73-8.55 s without it; the first run figure after a snapshot 5.0 s against
3.2-3.6 s. A long-lived process (a notebook's kernel) gains from the advice once its
memory is warm, so only the command turns it off; a notebook can set
`NUMPY_MADVISE_HUGEPAGE=0` before it starts. That variable, numpy's own switch, decides
whenever it is set.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["without_huge_page_advice"]


def without_huge_page_advice() -> bool:
    """Turn numpy's huge-page advice off for this process, unless
    `NUMPY_MADVISE_HUGEPAGE` says what it should be; whether it was turned off."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:
        return False
    multiarray: Any
    try:
        from numpy._core import multiarray  # numpy 2
    except ImportError:  # numpy 1.26
        from numpy.core import multiarray
    advise = getattr(multiarray, "_set_madvise_hugepage", None)
    if advise is None:  # a numpy without the switch: nothing to turn off
        return False
    advise(False)
    return True
