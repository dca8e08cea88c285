"""NumPy arrays as memref arguments of compiled MLIR functions.

A memref argument is passed (by pointer, see :mod:`zymase.frontends.mlir`) as
MLIR's descriptor ``{allocated, aligned, offset, sizes[rank], strides[rank]}``
built from the array: both pointers are the array's data pointer, the offset is 0,
sizes and strides (in elements) are the array's. The array is checked against the
memref type first — dtype, rank, static sizes, and the layout: an identity-layout
memref (``memref<?x?xf64>``) means C-contiguous row-major data; a strided layout
(``strided<[?, ?], offset: ?>``) accepts any strides whose static entries match.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass

from zymase.ir import (
    DYNAMIC_INDEX,
    Attribute,
    Float32Type,
    Float64Type,
    IndexType,
    IntegerType,
    MemRefType,
    NoneAttr,
)

_DESCRIPTORS: dict[int, type] = {}


def descriptor_struct(rank: int) -> type:
    """The ctypes mirror of the llvm descriptor struct of a rank-``rank`` memref."""
    if rank not in _DESCRIPTORS:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p), ("offset", ctypes.c_int64)]
        if rank:
            fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
        _DESCRIPTORS[rank] = type(f"MemRefDescriptor{rank}", (ctypes.Structure,), {"_fields_": fields})
    return _DESCRIPTORS[rank]


def _dtype_name(t: Attribute) -> str | None:
    if isinstance(t, Float64Type):
        return "float64"
    if isinstance(t, Float32Type):
        return "float32"
    if isinstance(t, IndexType):
        return "int64"
    if isinstance(t, IntegerType) and t.width.data in (8, 16, 32, 64):
        return f"int{t.width.data}"
    if isinstance(t, IntegerType) and t.width.data == 1:
        return "bool"
    return None


def _spelling(t: MemRefType) -> str:
    dims = "".join(("?" if d == DYNAMIC_INDEX else str(d)) + "x" for d in t.get_shape())
    layout = "" if isinstance(t.layout, NoneAttr) else f", {t.layout}"
    return f"memref<{dims}{t.get_element_type()}{layout}>"


@dataclass(frozen=True)
class MemRefParameter:
    """How one memref parameter crosses the ctypes boundary."""

    ctype: type
    convert: Callable[[object], object]
    spelling: str


def memref_parameter(t: MemRefType, *, function: str) -> MemRefParameter:
    from zymase.errors import ZymaseError
    from zymase.transforms.lower_memref import static_strides_and_offset

    spelling = _spelling(t)
    dtype = _dtype_name(t.get_element_type())
    if dtype is None:
        raise ZymaseError(
            f"{spelling} cannot be passed from Python: no NumPy dtype for {t.get_element_type()}",
            function=function,
            hint="use memrefs of f32, f64, i1, i8..i64 or index",
        )
    rank = t.get_num_dims()
    shape = t.get_shape()
    static_strides, static_offset = static_strides_and_offset(t)
    identity = isinstance(t.layout, NoneAttr)
    struct = descriptor_struct(rank)

    def convert(x: object) -> object:
        import numpy as np

        if not isinstance(x, np.ndarray):
            raise TypeError(f"a NumPy array is expected for {spelling}, got {type(x).__name__}")
        if x.dtype != np.dtype(dtype):
            raise TypeError(f"array of dtype {x.dtype} passed for {spelling} (needs {dtype})")
        if x.ndim != rank:
            raise TypeError(f"array of rank {x.ndim} passed for {spelling} (needs rank {rank})")
        for i, (want, got) in enumerate(zip(shape, x.shape)):
            if want != DYNAMIC_INDEX and want != got:
                raise TypeError(f"array of shape {x.shape} passed for {spelling} (dimension {i} must be {want})")
        if static_offset not in (None, 0):
            raise TypeError(f"{spelling} has a static offset {static_offset}; arrays start at offset 0")
        if identity:
            if not x.flags.c_contiguous:
                raise TypeError(
                    f"array passed for {spelling} is not C-contiguous "
                    "(pass np.ascontiguousarray(x), or use a strided<...> layout)"
                )
            strides = [int(np.prod(x.shape[i + 1:], dtype=np.int64)) for i in range(rank)]
        else:
            if any(s % x.itemsize for s in x.strides):
                raise TypeError(f"array passed for {spelling} has strides that are not whole elements")
            strides = [s // x.itemsize for s in x.strides]
            for i, (want, got) in enumerate(zip(static_strides, strides)):
                if want is not None and want != got and x.shape[i] > 1:
                    raise TypeError(
                        f"array passed for {spelling} has stride {got} in dimension {i} (needs {want})"
                    )
        d = struct()
        d.allocated = d.aligned = x.ctypes.data
        d.offset = 0
        if rank:
            d.sizes[:] = list(x.shape)
            d.strides[:] = strides
        return d

    # ctypes passes a descriptor instance by reference for a POINTER(struct) argument
    # and keeps it alive for the duration of the call.
    return MemRefParameter(ctypes.POINTER(struct), convert, spelling)
