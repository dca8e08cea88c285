"""Keep LLVM's "loop not unrolled" warnings about zymase's own loop hints off the user's
stderr.

:func:`zymase.frontends.numba.unroll_integer_powers` marks the loop of Numba's
``int_power`` ``llvm.loop.unroll.full`` so that ``x ** 2`` (an exponent constant once
inlined) unrolls before AD. With an exponent known only at run time (``x[i] ** i``) the
loop cannot unroll, and LLVM's pipeline (its WarnMissedTransformations pass, at the end of
the pre-AD and of the post-AD run) prints a warning for a hint the user never wrote.
llvmlite installs no diagnostic handler, so LLVM writes it to file descriptor 2 itself:
:func:`unroll_warnings_hidden` points fd 2 at a temporary file while the pipelines run
and writes everything else back. The generated code is the same; only the message goes.
"""

from __future__ import annotations

import os
import sys
import tempfile
from contextlib import contextmanager

#: the text of the warning LLVM prints for an ``unroll.full`` hint it could not honour
MISSED_UNROLL = b"loop not unrolled: the optimizer was unable to perform the requested transformation"


@contextmanager
def unroll_warnings_hidden(active: bool = True):
    """While the block runs, what reaches fd 2 is held back; afterwards it is written
    out again without the lines of LLVM's missed-unroll warning. Other output (another
    thread's, Python's) is delayed to the end of the block, not lost."""
    saved = None
    if active:
        try:
            sys.stderr.flush()
            saved = os.dup(2)
        except (OSError, ValueError):  # no fd 2 (a daemon), or sys.stderr closed: nothing to keep clean
            saved = None
    if saved is None:
        yield
        return
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            kept = [line for line in held.read().splitlines(keepends=True) if MISSED_UNROLL not in line]
            if kept:
                os.write(2, b"".join(kept))
