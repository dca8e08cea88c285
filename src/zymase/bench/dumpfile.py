"""Reader for the dump a workload writes with BENCH_DUMP=FILE (format in bench_common.h):
its inputs, its objective value and its gradient, as named numpy arrays."""

from __future__ import annotations

from pathlib import Path

import numpy as np

MAGIC = b"zymase-bench-dump 1\n"
_DTYPES = {"d": np.dtype("=f8"), "i": np.dtype("=i4")}


def read_dump(path: str | Path) -> dict[str, np.ndarray]:
    """Arrays by name; a gradient is named "d" + its array's name."""
    raw = Path(path).read_bytes()
    if not raw.startswith(MAGIC):
        raise ValueError(f"{path}: not a zymase bench dump")
    arrays: dict[str, np.ndarray] = {}
    pos = len(MAGIC)
    while pos < len(raw):
        end = raw.index(b"\n", pos)
        name, kind, count = raw[pos:end].decode().split()
        dtype = _DTYPES[kind]
        pos = end + 1
        nbytes = int(count) * dtype.itemsize
        arrays[name] = np.frombuffer(raw[pos : pos + nbytes], dtype=dtype).copy()
        pos += nbytes
    return arrays


def gradients(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The gradient arrays of a dump, keyed by the differentiated array's name."""
    return {name[1:]: a for name, a in arrays.items() if name.startswith("d") and name[1:] in arrays}
