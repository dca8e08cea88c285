"""The cyclic garbage collector's threshold while zymase builds a derivative: a
``zymase cc``/``opt``/``run`` process, and in the user's process the Python API's first
call of a transform (importing the engine, Numba's private copy, AD, LLVM).

A build allocates objects by the hundred thousand (xDSL's dialect classes at import,
then ops, attributes and uses) and frees few, so at Python's default threshold (700)
the collector runs hundreds of times over a growing heap: 250 times on ``zymase cc``'s
hand workload, 24 of them over the older generations, about 10% of the import and AD
phases' CPU, and 11-12% of GMM's first ``zymase.grad`` call (issue 29). While any
thread builds, it collects every 50,000 allocations (29 and 2 times on hand, the peak
memory unchanged at 141 MB); the previous threshold is put back when the last build
ends (one that is already higher, or 0, which turns collection off, is left as it is;
the tests call the CLI's ``main`` in their own process).

A command-line build (``zymase cc``, ``c++``, ``run``, ``opt`` started as a process) ends
with the process, and its cyclic garbage dies with it: :func:`not_collecting_until_exit`
turns the collector off for the rest of the process. At 50,000 allocations each young
collection walks 50,000 objects (about 10 ms on hand, two a build), and putting the
threshold back at the end made one more over every object allocated since, just before the
process exits: about 30 ms of CPU of a hand build in all, the peak memory the same (131 MB
on hand, 126 MB on tests/cxx/library_mix.cpp; the IR's cycles are few and small). On a
generated module of 30,000 instructions (bench/compile_growth.py's kind) the collector ran
32 times for 4 s of its 36 s of CPU, and turning it off cost 6% of peak memory (306 ->
324 MB)."""

from __future__ import annotations

import gc
import threading
from contextlib import contextmanager

#: the collector's first threshold while zymase builds (Python's default: 700)
BUILD_GC_THRESHOLD = 50_000

_lock = threading.Lock()
_builds = 0
_saved: tuple[int, ...] = ()


@contextmanager
def collecting_garbage_rarely():
    global _builds, _saved
    with _lock:
        if _builds == 0:
            _saved = gc.get_threshold()
            if 0 < _saved[0] < BUILD_GC_THRESHOLD:
                gc.set_threshold(BUILD_GC_THRESHOLD, *_saved[1:])
        _builds += 1
    try:
        yield
    finally:
        with _lock:
            _builds -= 1
            if _builds == 0:
                gc.set_threshold(*_saved)


def not_collecting_until_exit() -> None:
    """Turn the cyclic collector off for the rest of the process (a command-line build,
    which ends with the process: module doc)."""
    gc.disable()
