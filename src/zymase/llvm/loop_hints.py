"""Loop optimization hints (``!llvm.loop`` metadata) carried from the reader to the writer.

``#pragma clang loop vectorize(disable)``, ``#pragma unroll 4`` and the like reach LLVM IR as
``!llvm.loop`` metadata on a loop's latch branch. The reader keeps the hints LLVM's loop passes
act on as the attribute ``zymase.loop_hints`` (``name`` or ``name=value`` strings) on the branch
op, and the writer attaches them again, so the primal loops of a derivative are optimized as the
programmer asked. Branches the AD engine creates (the reverse sweep's loops) carry none: a hint
written for a primal loop says nothing about its adjoint.
"""

from __future__ import annotations

import re

#: the branch op attribute holding the hints
LOOP_HINTS_ATTR = "zymase.loop_hints"

#: hint name -> the type of its operand (None: a hint without operand)
LOOP_HINT_TYPES: dict[str, str | None] = {
    "llvm.loop.mustprogress": None,
    "llvm.loop.vectorize.enable": "i1",
    "llvm.loop.vectorize.width": "i32",
    "llvm.loop.vectorize.scalable.enable": "i1",
    "llvm.loop.vectorize.predicate.enable": "i1",
    "llvm.loop.interleave.count": "i32",
    "llvm.loop.unroll.disable": None,
    "llvm.loop.unroll.enable": None,
    "llvm.loop.unroll.full": None,
    "llvm.loop.unroll.count": "i32",
    "llvm.loop.unroll.runtime.disable": None,
    "llvm.loop.unroll_and_jam.disable": None,
    "llvm.loop.unroll_and_jam.count": "i32",
    "llvm.loop.distribute.enable": "i1",
    "llvm.licm_versioning.disable": None,
}


#: ``vectorize(enable)``, ``vectorize_width(N)`` and ``interleave_count(N)`` make LLVM's loop
#: vectorizer act whatever the pipeline asks; before AD it must not (the engine differentiates
#: scalar code), so during the pre-AD pipeline these hints go by another name, which the reader
#: reads as the original one.
_FORCING = re.compile(r'!"llvm\.loop\.(vectorize|interleave)\.')
HIDDEN_PREFIX = "zymase.hidden."


def hide_vectorization_hints(ll_text: str) -> str:
    """``ll_text`` with its vectorization hints renamed out of LLVM's sight."""
    return _FORCING.sub(lambda m: f'!"{HIDDEN_PREFIX}llvm.loop.{m.group(1)}.', ll_text)


def show_vectorization_hints(ll_text: str) -> str:
    """``ll_text`` with the hints :func:`hide_vectorization_hints` renamed given their names
    back: for the IR that reaches the post-AD pipeline without going through the reader
    (the functions ``llvm/reachable.merge`` keeps as they were)."""
    return ll_text.replace(f'!"{HIDDEN_PREFIX}llvm.loop.', '!"llvm.loop.')


def hint_name(name: str) -> str:
    """The hint a metadata string names, hidden or not."""
    return name[len(HIDDEN_PREFIX):] if name.startswith(HIDDEN_PREFIX) else name
