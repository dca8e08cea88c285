"""The framework of the lowering to the ``llvm`` dialect: type conversion, the registry
of lowering functions and the :class:`Emitter` they build with.

:mod:`zymase.transforms.lower_to_llvm` drives the lowering; the lowering functions
themselves live with their dialects (:mod:`~zymase.transforms.lower_standard_ops`
for func/arith/math/cf, :mod:`~zymase.transforms.lower_tape` for the enzyme
accumulator and tape ops, :mod:`~zymase.transforms.lower_memref` for memrefs) and
register here with :func:`lowers`.

Type conversion is the identity except ``index`` -> ``i64`` (zymase targets 64-bit
hosts) and the enzyme types, which become pointers to their memory
representation (see :mod:`zymase.transforms.lower_tape`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from zymase.errors import ZymaseError
from zymase.ir import (Attribute, Float16Type, Float32Type, Float64Type, FloatAttr, IndexType,
                       IntegerType, MemRefType, Operation, SSAValue, VectorType,
                       enzyme, fast_ops, i64, llvm, llvm_ext, location_of)
from zymase.analysis.op_classes import is_a

if TYPE_CHECKING:
    from zymase.transforms.lower_to_llvm import FunctionLowering

__all__ = ["LOWERINGS", "PTR", "Emitter", "lower_type", "llvm_op", "lowers"]

PTR = llvm.LLVMPointerType()


def lower_type(t: Attribute, *, function: str | None = None) -> Attribute:
    """The llvm-dialect type of a value of type ``t``.

    ``index`` becomes ``i64``; accumulators and caches become pointers to their
    stack slot; integer and float types are already llvm-compatible.
    """
    if is_a(t, IndexType):
        return i64
    if is_a(t, (enzyme.GradientType, enzyme.CacheType, enzyme.IndexedCacheType)):
        return PTR
    if is_a(t, IntegerType):
        if t.signedness.data.name != "SIGNLESS":
            raise ZymaseError(
                f"signed/unsigned integer type {t} cannot be lowered",
                function=function,
                hint="use signless integers (i32, i64, ...) as arith does",
            )
        return t
    if is_a(t, MemRefType):
        from zymase.transforms.lower_memref import descriptor_type

        return descriptor_type(t)
    if llvm.is_compatible_type(t) or t.name.startswith("llvm."):
        return t  # already an llvm type (incl. zymase's packed structs)
    raise ZymaseError(
        f"values of type {t} cannot be lowered to the llvm dialect",
        function=function,
        hint="only scalar integer/float/index types are supported by lower-to-llvm",
    )


def _mangle(t: Attribute) -> str:
    """The overload suffix LLVM uses in intrinsic names (``f64``, ``i32``...)."""
    if isinstance(t, Float64Type):
        return "f64"
    if isinstance(t, Float32Type):
        return "f32"
    if isinstance(t, Float16Type):
        return "f16"
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    raise ZymaseError(f"no LLVM intrinsic overload for type {t}")


def alloc_size(t: Attribute) -> int | None:
    """Bytes one value of ``t`` occupies in an array, when known without a layout."""
    if isinstance(t, Float16Type):
        return 2
    if isinstance(t, Float32Type):
        return 4
    if isinstance(t, Float64Type):
        return 8
    if isinstance(t, llvm.LLVMPointerType):
        return 8
    if isinstance(t, IntegerType):
        nbytes = max(1, (t.width.data + 7) // 8)
        return 1 << (nbytes - 1).bit_length()
    if isinstance(t, VectorType) and len(t.get_shape()) == 1 and (lane := alloc_size(t.element_type)):
        # x86-64's layout: a vector takes (and is aligned to) its size rounded up to a
        # power of two; an alloca of <4 x float> aligned to 8 breaks its aligned stores
        nbytes = lane * t.get_shape()[0]
        return 1 << (nbytes - 1).bit_length()
    return None


def llvm_op(name: str) -> type[Operation]:
    """An op class of the extended llvm dialect (:mod:`zymase.ir.llvm_ext`) by name.

    Looked up by name rather than imported by class name so that this module only
    depends on the op's textual identity, which is fixed by MLIR.
    """
    for op_class in llvm_ext.LLVM_EXT.operations:
        if op_class.name == name:
            return op_class
    raise LookupError(f"the extended llvm dialect has no op named '{name}'")


# zymase's extended llvm dialect replaces a few xDSL op classes with subclasses
# (richer printing/verification); build those so the module is homogeneous with
# what the parser produces (the comparisons and select: lower_standard_ops).
ExtLoadOp = llvm_op("llvm.load")
ExtStoreOp = llvm_op("llvm.store")


# --------------------------------------------------------------------------- emitter


class Emitter:
    """Collects the llvm ops that replace one op; they are inserted before it.

    Also the lowering functions' access to function- and module-level state:
    entry-block allocas, external declarations, runtime helpers.
    """

    def __init__(self, fn: FunctionLowering, op: Operation):
        self.fn = fn
        self.op = op
        self.ops: list[Operation] = []

    # -- building
    def emit(self, new_op: Operation) -> Operation:
        self.ops.append(new_op)
        return new_op

    def value(self, new_op: Operation) -> SSAValue:
        """Emit an op and return its single result."""
        return self.emit(new_op).results[0]

    def type(self, t: Attribute) -> Attribute:
        return lower_type(t, function=self.fn.name)

    def const(self, t: Attribute, value: int | float) -> SSAValue:
        attr = FloatAttr(float(value), t) if _is_float(t) else fast_ops.int_attr(int(value), t)
        return self.value(fast_ops.constant(attr, t))

    def zero(self, t: Attribute) -> SSAValue:
        """The all-zero value of ``t`` (0, 0.0, null, zeroinitializer)."""
        if _is_float(t) or isinstance(t, IntegerType):
            return self.const(t, 0)
        return self.value(llvm.ZeroOp.build(result_types=[t]))

    def intrinsic(
        self,
        base: str,
        args: Sequence[SSAValue],
        result_type: Attribute | None,
        overloads: Sequence[Attribute],
        fastmath: llvm.FastMathAttr | None = None,
    ) -> Operation:
        """``llvm.call_intrinsic "llvm.<base>.<overloads>"(args)``."""
        name = ".".join(["llvm", base, *(_mangle(t) for t in overloads)])
        op = fast_ops.call_intrinsic(name, args, [] if result_type is None else [result_type])
        if fastmath is not None:
            op.properties["fastmathFlags"] = fastmath
        return self.emit(op)

    def call(
        self,
        callee: str,
        args: Sequence[SSAValue],
        result_type: Attribute | None,
        fastmath: llvm.FastMathAttr | None = None,
    ) -> Operation:
        op = fast_ops.call(callee, args, result_type)
        if fastmath is not None:
            op.properties["fastmathFlags"] = fastmath
        return self.emit(op)

    def size_of(self, t: Attribute) -> SSAValue:
        """``i64`` byte size of ``t`` (the ``gep null, 1`` idiom for aggregates)."""
        size = alloc_size(t)
        if size is not None:
            return self.const(i64, size)
        null = self.value(llvm.ZeroOp.build(result_types=[PTR]))
        end = self.value(llvm.GEPOp(null, [1], t))
        return self.value(llvm.PtrToIntOp(end, i64))

    # -- errors
    def error(self, message: str, hint: str | None = None) -> ZymaseError:
        return ZymaseError(
            message,
            construct=self.op.name,
            function=self.fn.name,
            location=location_of(self.op),
            hint=hint,
        )


LoweringFn = Callable[[Operation, Emitter], Sequence[SSAValue]]

LOWERINGS: dict[type[Operation], LoweringFn] = {}
"""Op class -> lowering function (the values it returns replace the op's results)."""


def lowers(*op_classes: type[Operation]) -> Callable[[LoweringFn], LoweringFn]:
    """Register a lowering function for the given op classes."""

    def register(fn: LoweringFn) -> LoweringFn:
        for op_class in op_classes:
            LOWERINGS[op_class] = fn
        return fn

    return register


def _is_float(t: Attribute) -> bool:
    return is_a(t, (Float16Type, Float32Type, Float64Type))


def packed_result_type(types: Sequence[Attribute]) -> Attribute | None:
    """One result is returned as is, several as a literal struct, none as void."""
    if not types:
        return None
    if len(types) == 1:
        return types[0]
    return llvm.LLVMStructType.from_type_list(list(types))
