"""Inline assembly the reader can take: single x86 SIMD min/max instructions, read as
the lane-wise compare and select they compute (part of :mod:`zymase.llvm.reader`).

Eigen 3 writes its SSE/AVX ``pmin``/``pmax`` packets as inline assembly whenever the
compiler claims to be GCC older than 6.3 (``maxpd %[a], %[res]``), and clang claims
GCC 4.2, so ``maxCoeff()``, ``cwiseMax()``, ``minCoeff()`` ... reach zymase as
``asm "maxpd $1, $0", "=x,x,0"``. Those instructions have an exact meaning in IR:
``maxpd src, dst`` is, lane by lane, ``dst > src ? dst : src`` (the second operand of
the Intel form, ``src``, when either is NaN), ``minpd`` the same with ``<``; the AVX
forms ``vmaxpd s2, s1, d`` give ``s1 > s2 ? s1 : s2``. Any other inline assembly is read
as ``llvm.inline_asm``."""

from __future__ import annotations

import re

from zymase.ir import VectorType

#: mnemonic (without the AVX ``v``) -> the fcmp predicate that picks the first operand
_MIN_MAX = {"maxpd": "ogt", "maxps": "ogt", "minpd": "olt", "minps": "olt"}
_TEMPLATE = re.compile(r"^\s*(v?)(\w+)\s+\$(\d+)\s*,\s*\$(\d+)\s*(?:,\s*\$(\d+)\s*)?$")


def lanewise_min_max(template: str, constraints: str, args: list, result_type) -> tuple | None:
    """``(predicate, first, second)`` when the asm computes ``first <pred> second ?
    first : second`` lane by lane on float vectors (``args`` are the call's operands,
    in the order of the constraints' inputs), else None."""
    m = _TEMPLATE.match(template)
    if m is None or m.group(2) not in _MIN_MAX or not isinstance(result_type, VectorType):
        return None
    avx, numbers = m.group(1) == "v", [int(g) for g in m.group(3, 4, 5) if g is not None]
    if len(numbers) != (3 if avx else 2):
        return None
    parts = [c for c in constraints.split(",") if not c.startswith("~")]
    outputs = [c for c in parts if c.startswith("=")]
    inputs = parts[len(outputs):]
    if outputs != ["=x"] or len(inputs) != len(args) or not all(c in ("x", "0") for c in inputs):
        return None

    def operand(n: int):
        if n == 0:  # the output: its value before the instruction is the tied input
            tied = [a for a, c in zip(args, inputs) if c == "0"]
            return tied[0] if len(tied) == 1 else None
        return args[n - 1] if 0 < n <= len(args) and inputs[n - 1] == "x" else None

    if avx:  # AT&T "vmaxpd s2, s1, d": d = s1 op s2
        s2, s1, dest = numbers
        if dest != 0 or "0" in inputs:
            return None
        first, second = operand(s1), operand(s2)
    else:  # AT&T "maxpd src, dst": dst = dst op src
        src, dest = numbers
        if dest != 0:
            return None
        first, second = operand(0), operand(src)
    if first is None or second is None or any(getattr(a, "type", None) != result_type for a in (first, second)):
        return None
    return _MIN_MAX[m.group(2)], first, second

