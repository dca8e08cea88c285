"""The x86-64 data layout of LLVM types: sizes, alignments, struct field offsets.

Type analysis places facts at byte offsets with it; the shadow and tape code
(``autodiff/forwarding``, ``autodiff/ascending``, ``transforms/byval_copies``, ...)
sizes memory with it. ``iN`` takes ``ceil(N/8)`` bytes rounded up to a power-of-two
alignment (at most 16), ``f80`` 16 (10 bytes stored), pointers 8, packed structs
have no padding.
"""

from __future__ import annotations

import math

from zymase.ir import Attribute, Float16Type, Float32Type, Float64Type, IntegerType, VectorType, llvm, llvm_ext
from zymase.analysis.op_classes import is_a

__all__ = ["size_align", "struct_offsets", "store_size", "float_kind", "scalar_kind", "is_struct", "FLOAT_SIZE"]

#: Bytes of each floating-point type (by type analysis's names).
FLOAT_SIZE = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "f80": 16, "f128": 16}


def float_kind(t: Attribute) -> str | None:
    if is_a(t, Float32Type):
        return "f32"
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, llvm.BFloat16Type):
        return "bf16"
    if isinstance(t, llvm.Float80Type):
        return "f80"
    if isinstance(t, llvm.Float128Type):
        return "f128"
    return None


def scalar_kind(t: Attribute) -> str | None:
    if isinstance(t, llvm.LLVMPointerType):
        return "ptr"
    if isinstance(t, IntegerType):
        return "int"
    return float_kind(t)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def is_struct(t: Attribute) -> bool:
    return isinstance(t, (llvm.LLVMStructType, llvm_ext.LLVMPackedStructType))


def size_align(t: Attribute) -> tuple[int, int]:
    """(allocation size, ABI alignment) in bytes of an LLVM type on x86-64.

    ``iN``: ``ceil(N/8)`` bytes rounded up to a power-of-two alignment (at most 16,
    ``i128`` is 16/16 as in LLVM 18+); ``f80`` is 16/16; pointers 8/8; arrays
    ``N * size``; structs with natural alignment and tail padding; packed structs
    without padding and alignment 1; vectors naturally aligned (power of two).
    """
    if is_a(t, IntegerType):
        nbytes = max(1, (t.width.data + 7) // 8)
        align = min(_pow2_at_least(nbytes), 16)
        return -(-nbytes // align) * align, align
    if is_a(t, llvm.LLVMPointerType):
        return 8, 8
    kind = float_kind(t)
    if kind is not None:
        size = FLOAT_SIZE[kind]
        return size, size
    if isinstance(t, llvm.LLVMArrayType):
        size, align = size_align(t.type)
        return t.size.data * size, align
    if isinstance(t, VectorType):
        count = math.prod(t.get_shape())
        elem = t.element_type
        bits = elem.width.data if isinstance(elem, IntegerType) else 8 * size_align(elem)[0]
        nbytes = max(1, (count * bits + 7) // 8)
        align = _pow2_at_least(nbytes)
        return align, align
    if is_struct(t):
        offsets, size, align = _struct_layout(t)
        return size, align
    return 0, 1  # void, opaque struct, unknown


def _struct_layout(t: Attribute) -> tuple[list[int], int, int]:
    packed = isinstance(t, llvm_ext.LLVMPackedStructType)
    offset, max_align, offsets = 0, 1, []
    for ft in t.types.data:
        size, align = size_align(ft)
        if packed:
            align = 1
        offset = -(-offset // align) * align
        offsets.append(offset)
        offset += size
        max_align = max(max_align, align)
    return offsets, -(-offset // max_align) * max_align, max_align


def struct_offsets(t: Attribute) -> list[int]:
    """Byte offsets of the fields of an ``!llvm.struct`` / ``!llvm.packed_struct``."""
    return _struct_layout(t)[0]


def store_size(t: Attribute) -> int:
    """Bytes a load/store of ``t`` touches (``i1`` touches 1, ``f80`` 10)."""
    if is_a(t, IntegerType):
        return max(1, (t.width.data + 7) // 8)
    if float_kind(t) == "f80":
        return 10
    return size_align(t)[0]
