"""The manifest in snapshot order: each snapshot's position, base and whether it is linear."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Snapshots", "order_manifest"]


def order_manifest(manifest: pa.Table) -> pa.Table:
    """The manifest in snapshot order, one row per id, with `idx` and `linear` added.

    In Arrow rather than DuckDB: every read and every write orders the manifest, and a
    year of hourly snapshots makes it 8,760 rows long.
    """
    ordered = manifest.take(pc.sort_indices(manifest, [("snapshot_id", "ascending")]))
    ids = ordered.column("snapshot_id").to_numpy(zero_copy_only=False)
    # One row per id: a compaction can briefly leave a manifest row in two files.
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    ordered, ids = ordered.filter(pa.array(first)), ids[first]
    bases = ordered.column("base_id")
    # Linear: based on the snapshot just before it (the first: based on none).
    previous = pa.concat_arrays([pa.nulls(1, pa.string()), pa.array(ids[:-1], pa.string())])
    same = pc.equal(bases.cast(pa.string()), previous[: len(ids)])
    linear = np.array(pc.fill_null(same, False).to_numpy(zero_copy_only=False), dtype=bool)
    if len(ids):
        linear[0] = not bases[0].is_valid
    ordered = ordered.append_column("idx", pa.array(np.arange(len(ids)), pa.int64()))
    return ordered.append_column("linear", pa.array(linear, pa.bool_()))


class Snapshots:
    """The ordered manifest's columns as arrays, made once per manifest: every table's
    log needs them, and a year of hourly snapshots is 8,760 rows (Python rows of it
    cost more than a small query)."""

    _last: tuple[pa.Table, Snapshots] | None = None

    def __init__(self, manifest: pa.Table) -> None:
        self._times = manifest.column("snapshot_at")
        self.ids: list[str] = manifest.column("snapshot_id").to_pylist()
        self.bases: list[str | None] = manifest.column("base_id").to_pylist()
        self.full = np.array(
            pc.fill_null(manifest.column("full"), False).to_numpy(zero_copy_only=False), bool
        )
        self.linear = np.array(manifest.column("linear").to_numpy(zero_copy_only=False), bool)
        self.position = {snapshot_id: i for i, snapshot_id in enumerate(self.ids)}

    @classmethod
    def of(cls, manifest: pa.Table) -> Snapshots:
        last = cls._last
        if last is None or last[0] is not manifest:
            last = (manifest, cls(manifest))
            cls._last = last
        return last[1]

    def time(self, i: int) -> datetime:
        when: datetime = self._times[i].as_py()
        return when
