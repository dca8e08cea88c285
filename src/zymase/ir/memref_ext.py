"""``memref`` operations whose textual form xDSL 0.74 lacks.

xDSL's ``memref.cast`` and ``memref.copy`` have no custom assembly format, so MLIR
text using them (``memref.cast %a : memref<?xf32> to memref<4xf32>``) would not
parse. Subclasses with MLIR's format replace them in one extended ``memref``
dialect (:data:`MEMREF_EXT`), as :mod:`zymase.ir.arith_ext` does for ``arith``;
xDSL itself is never patched. ``memref.copy`` also accepts shapes that are only
compatible (a static size against a dynamic one), as MLIR does.
"""

from __future__ import annotations

from xdsl.dialects import memref as _xmemref
from xdsl.dialects.builtin import DYNAMIC_INDEX, MemRefType, UnrankedMemRefType
from xdsl.ir import Dialect
from xdsl.irdl import base, irdl_op_definition, operand_def, result_def, traits_def
from xdsl.traits import MemoryReadEffect, MemoryWriteEffect, NoMemoryEffect
from xdsl.utils.exceptions import VerifyException


@irdl_op_definition
class CastOp(_xmemref.CastOp):
    """``memref.cast %src : memref<...> to memref<...>``."""

    name = "memref.cast"
    source = operand_def(base(MemRefType) | base(UnrankedMemRefType))
    dest = result_def(base(MemRefType) | base(UnrankedMemRefType))
    traits = traits_def(NoMemoryEffect())
    assembly_format = "$source attr-dict `:` type($source) `to` type($dest)"


@irdl_op_definition
class CopyOp(_xmemref.CopyOp):
    """``memref.copy %src, %dst : memref<...> to memref<...>``."""

    name = "memref.copy"
    source = operand_def(MemRefType)
    destination = operand_def(MemRefType)
    traits = traits_def(MemoryWriteEffect(), MemoryReadEffect())
    assembly_format = "$source `,` $destination attr-dict `:` type($source) `to` type($destination)"

    def verify_(self) -> None:
        source, destination = self.source.type, self.destination.type
        assert isinstance(source, MemRefType) and isinstance(destination, MemRefType)
        a, b = source.get_shape(), destination.get_shape()
        if len(a) != len(b) or any(x != y and DYNAMIC_INDEX not in (x, y) for x, y in zip(a, b)):
            raise VerifyException("'memref.copy' source and destination shapes are not compatible")
        if source.get_element_type() != destination.get_element_type():
            raise VerifyException("'memref.copy' source and destination element types differ")


_REPLACED = {CastOp.name: CastOp, CopyOp.name: CopyOp}

MEMREF_EXT = Dialect(
    "memref",
    [_REPLACED.get(op.name, op) for op in _xmemref.MemRef.operations],
    [*_xmemref.MemRef.attributes],
)
