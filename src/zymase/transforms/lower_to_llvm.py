"""Lowering of ``func``/``arith``/``math``/``cf`` and the enzyme tape ops to ``llvm``.

xDSL has no lowering of these dialects to its ``llvm`` dialect, so zymase owns one
(docs/architecture.md, section 5). The output is what :mod:`zymase.llvm.writer` turns
into LLVM IR text: ``llvm.func`` ops whose bodies use only llvm-dialect ops (plus
the extension ops of :mod:`zymase.ir.llvm_ext`), with block arguments kept as they
are (the writer makes phis).

How it works
------------
Each op class maps to one small *lowering function* in :data:`LOWERINGS`. The
function receives the op and an :class:`Emitter`, emits the replacement llvm ops
and returns the values that replace the op's results; the driver inserts the
emitted ops before the op, rewires the uses and erases the op. Blocks are visited
in reverse post-order, so every operand defined by an op has already been lowered
(and so has its final, converted type) when its users are lowered; block arguments
are retyped up front.

Type conversion is the identity except ``index`` -> ``i64`` (zymase targets 64-bit
hosts) and the enzyme types, which become pointers to their memory
representation (see :func:`_lower_init`).

An op without a lowering is a user-visible :class:`~zymase.errors.ZymaseError`
naming the op and the function, with a hint.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence

from zymase.errors import ZymaseError
from zymase.transforms.tape_pool import (CACHE_GROW, HEAP_TAPE, HEAP_TAPE_RUNTIME, TAPE_FREE, TAPE_POOL_GLOBAL,
                                         TAPE_POOL_TYPE)
from zymase.ir import (
    StringAttr,
    Attribute,
    Block,
    DenseArrayBase,
    Float16Type,
    Float32Type,
    Float64Type,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    ModulePass,
    OpResult,
    Operation,
    Rewriter,
    SSAValue,
    VectorType,
    arith,
    arith_ext,
    cf,
    enzyme,
    func,
    i1,
    i64,
    llvm,
    llvm_ext,
    location_of,
    math,
    parse_mlir,
)

__all__ = ["LOWERINGS", "LowerToLLVM", "lower_to_llvm", "lower_type", "llvm_op", "Emitter"]

PTR = llvm.LLVMPointerType()

CACHE_INLINE_BYTES = 128
CACHE_STRUCT = llvm.LLVMStructType.from_type_list(
    [PTR, i64, i64, llvm.LLVMArrayType(CACHE_INLINE_BYTES, IntegerType(8))]
)
"""Memory layout of an ``!enzyme.Cache<T>``: ``{ptr data, i64 size, i64 capacity,
[128 x i8] inline}`` with ``size``/``capacity`` in bytes (so one push/pop pair
serves every T). The first 128 bytes live in the cache itself, on the stack: a
short loop or a branch decision never calls malloc; longer ones move to the heap."""

CACHE_PUSH = "__zymase_cache_push"
GLOBAL_TAPE = "__zymase_tape"
CACHE_POP = "__zymase_cache_pop"


# --------------------------------------------------------------------------- pass


class LowerToLLVM(ModulePass):
    """``lower-to-llvm``: func/arith/math/cf + enzyme init/get/set/push/pop -> llvm."""

    name = "lower-to-llvm"

    def apply(self, ctx, op: ModuleOp) -> None:  # noqa: ARG002 - ModulePass signature
        lower_to_llvm(op)


def lower_to_llvm(module: ModuleOp) -> ModuleOp:
    """Lower ``module`` in place (and return it for convenience)."""
    from zymase.transforms.lower_memref import prepare_memref_lowering  # registers the memref lowerings

    prepare_memref_lowering(module)  # linalg/scf -> loops -> branches; memref operand types
    _ModuleLowering(module).run()
    return module


# --------------------------------------------------------------------------- types


def lower_type(t: Attribute, *, function: str | None = None) -> Attribute:
    """The llvm-dialect type of a value of type ``t``.

    ``index`` becomes ``i64``; accumulators and caches become pointers to their
    stack slot; integer and float types are already llvm-compatible.
    """
    if isinstance(t, IndexType):
        return i64
    if isinstance(t, (enzyme.GradientType, enzyme.CacheType, enzyme.IndexedCacheType)):
        return PTR
    if isinstance(t, IntegerType):
        if t.signedness.data.name != "SIGNLESS":
            raise ZymaseError(
                f"signed/unsigned integer type {t} cannot be lowered",
                function=function,
                hint="use signless integers (i32, i64, ...) as arith does",
            )
        return t
    if isinstance(t, MemRefType):
        from zymase.transforms.lower_memref import descriptor_type

        return descriptor_type(t)
    if llvm.is_compatible_type(t) or t.name.startswith("llvm."):
        return t  # already an llvm type (incl. zymase's packed structs)
    raise ZymaseError(
        f"values of type {t} cannot be lowered to the llvm dialect",
        function=function,
        hint="only scalar integer/float/index types are supported by lower-to-llvm",
    )


def _elem_type(t: Attribute) -> Attribute:
    """Lowered element type of a ``!enzyme.Gradient<T>`` / ``!enzyme.Cache<T>``."""
    return lower_type(t.elem)  # type: ignore[attr-defined]


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


def _alloc_size(t: Attribute) -> int | None:
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
    if isinstance(t, VectorType) and len(t.get_shape()) == 1 and (lane := _alloc_size(t.element_type)):
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
# what the parser produces.
_ICmpOp = llvm_op("llvm.icmp")
_FCmpOp = llvm_op("llvm.fcmp")
_SelectOp = llvm_op("llvm.select")
_LoadOp = llvm_op("llvm.load")
_StoreOp = llvm_op("llvm.store")


# --------------------------------------------------------------------------- emitter


class Emitter:
    """Collects the llvm ops that replace one op; they are inserted before it.

    Also the lowering functions' access to function- and module-level state:
    entry-block allocas, external declarations, runtime helpers.
    """

    def __init__(self, fn: _FunctionLowering, op: Operation):
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
        attr = FloatAttr(float(value), t) if _is_float(t) else IntegerAttr(int(value), t)
        return self.value(llvm.ConstantOp(attr, t))

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
        op = llvm.CallIntrinsicOp(name, args, [] if result_type is None else [result_type])
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
        op = llvm.CallOp(callee, *args, return_type=result_type)
        if fastmath is not None:
            op.properties["fastmathFlags"] = fastmath
        return self.emit(op)

    def size_of(self, t: Attribute) -> SSAValue:
        """``i64`` byte size of ``t`` (the ``gep null, 1`` idiom for aggregates)."""
        size = _alloc_size(t)
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
    return isinstance(t, (Float16Type, Float32Type, Float64Type))


def _fastmath(op: Operation) -> llvm.FastMathAttr:
    """The llvm fast-math flags equal to an arith/math op's ``fastmath`` property."""
    flags = op.properties.get("fastmath")
    return llvm.FastMathAttr(flags.data if flags is not None else None)  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- arith


@lowers(arith.ConstantOp)
def _lower_constant(op: arith.ConstantOp, e: Emitter) -> Sequence[SSAValue]:
    """Scalar constants only; index constants are re-typed to i64."""
    t = e.type(op.result.type)
    value = op.value
    if isinstance(value, IntegerAttr):
        return [e.const(t, value.value.data)]
    if isinstance(value, FloatAttr):
        return [e.value(llvm.ConstantOp(value, t))]
    raise e.error(
        f"only scalar constants can be lowered, got {value}",
        hint="vector/tensor constants are not supported by lower-to-llvm",
    )


_FLOAT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.AddfOp: llvm.FAddOp,
    arith.SubfOp: llvm.FSubOp,
    arith.MulfOp: llvm.FMulOp,
    arith.DivfOp: llvm.FDivOp,
    arith_ext.RemFOp: llvm.FRemOp,
}


def _lower_float_binary(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """One-to-one, carrying the fast-math flags."""
    llvm_class = _FLOAT_BINARY[type(op)]
    return [e.value(llvm_class(op.operands[0], op.operands[1], _fastmath(op)))]


for _cls in _FLOAT_BINARY:
    LOWERINGS[_cls] = _lower_float_binary


@lowers(arith.NegfOp)
def _lower_negf(op: arith.NegfOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(llvm.FNegOp(op.operand, _fastmath(op)))]


_INT_BINARY_WRAPPING: dict[type[Operation], type[Operation]] = {
    arith.AddiOp: llvm.AddOp,
    arith.SubiOp: llvm.SubOp,
    arith.MuliOp: llvm.MulOp,
    arith.ShLIOp: llvm.ShlOp,
}
"""Integer ops that carry nsw/nuw overflow flags in both dialects."""

_INT_BINARY: dict[type[Operation], type[Operation]] = {
    arith.DivSIOp: llvm.SDivOp,
    arith.DivUIOp: llvm.UDivOp,
    arith.RemSIOp: llvm.SRemOp,
    arith.RemUIOp: llvm.URemOp,
    arith.AndIOp: llvm.AndOp,
    arith.OrIOp: llvm.OrOp,
    arith.XOrIOp: llvm.XOrOp,
    arith.ShRSIOp: llvm.AShrOp,
    arith.ShRUIOp: llvm.LShrOp,
}


def _overflow_flags(op: Operation) -> IntegerAttr:
    """arith's ``overflow<nsw, nuw>`` as llvm's integer encoding (nsw=1, nuw=2)."""
    flags = op.properties.get("overflowFlags")
    names = {str(f) for f in flags.data} if flags is not None else set()  # type: ignore[attr-defined]
    return IntegerAttr((1 if "nsw" in names else 0) | (2 if "nuw" in names else 0), 32)


def _lower_int_binary(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    lhs, rhs = op.operands
    if type(op) in _INT_BINARY_WRAPPING:
        llvm_class = _INT_BINARY_WRAPPING[type(op)]
        return [e.value(llvm_class(lhs, rhs, overflow=_overflow_flags(op)))]
    return [e.value(_INT_BINARY[type(op)](lhs, rhs))]


for _cls in (*_INT_BINARY_WRAPPING, *_INT_BINARY):
    LOWERINGS[_cls] = _lower_int_binary


@lowers(arith.FloorDivSIOp, arith.CeilDivSIOp, arith.CeilDivUIOp)
def _lower_rounding_div(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """Division rounding toward -inf/+inf: truncating division plus a correction of
    one when the remainder is non-zero and the exact quotient lies on that side."""
    a, b = op.operands
    t = e.type(op.results[0].type)
    zero = e.const(t, 0)
    if isinstance(op, arith.CeilDivUIOp):
        q = e.value(llvm.UDivOp(a, b))
        r = e.value(llvm.URemOp(a, b))
        inexact = e.value(_ICmpOp(r, zero, _icmp("ne")))
        return [e.value(llvm.AddOp(q, e.value(llvm.ZExtOp(inexact, t))))]
    q = e.value(llvm.SDivOp(a, b))
    r = e.value(llvm.SRemOp(a, b))
    inexact = e.value(_ICmpOp(r, zero, _icmp("ne")))
    r_neg = e.value(_ICmpOp(r, zero, _icmp("slt")))
    b_neg = e.value(_ICmpOp(b, zero, _icmp("slt")))
    # floor: adjust when signs differ (quotient negative); ceil: when they agree.
    pred = "ne" if isinstance(op, arith.FloorDivSIOp) else "eq"
    side = e.value(_ICmpOp(r_neg, b_neg, _icmp(pred)))
    adjust = e.value(llvm.ZExtOp(e.value(llvm.AndOp(inexact, side)), t))
    if isinstance(op, arith.FloorDivSIOp):
        return [e.value(llvm.SubOp(q, adjust))]
    return [e.value(llvm.AddOp(q, adjust))]


def _icmp(name: str) -> IntegerAttr:
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


@lowers(arith.CmpiOp)
def _lower_cmpi(op: arith.CmpiOp, e: Emitter) -> Sequence[SSAValue]:
    """Predicates are mapped by name (``slt`` -> ``slt``), not by enum index."""
    name = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
    return [e.value(_ICmpOp(op.lhs, op.rhs, _icmp(name)))]


_FCMP_NAMES = {"false": "_false", "true": "_true"}


@lowers(arith.CmpfOp)
def _lower_cmpf(op: arith.CmpfOp, e: Emitter) -> Sequence[SSAValue]:
    name = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
    cmp = _FCmpOp(op.lhs, op.rhs, _FCMP_NAMES.get(name, name))
    cmp.properties["fastmathFlags"] = _fastmath(op)
    return [e.value(cmp)]


@lowers(arith.SelectOp)
def _lower_select(op: arith.SelectOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(_SelectOp(op.cond, op.lhs, op.rhs))]


_FLOAT_MINMAX = {
    arith.MinimumfOp: "minimum",
    arith.MaximumfOp: "maximum",
    arith.MinnumfOp: "minnum",
    arith.MaxnumfOp: "maxnum",
}
_INT_MINMAX = {
    arith.MinSIOp: "smin",
    arith.MaxSIOp: "smax",
    arith.MinUIOp: "umin",
    arith.MaxUIOp: "umax",
}


@lowers(*_FLOAT_MINMAX, *_INT_MINMAX)
def _lower_minmax(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """min/max have exact LLVM intrinsic counterparts (NaN semantics included)."""
    t = e.type(op.results[0].type)
    if type(op) in _FLOAT_MINMAX:
        call = e.intrinsic(_FLOAT_MINMAX[type(op)], op.operands, t, [t], _fastmath(op))
    else:
        call = e.intrinsic(_INT_MINMAX[type(op)], op.operands, t, [t])
    return [call.results[0]]


# -- casts


def _resize_int(e: Emitter, x: SSAValue, target: Attribute, *, signed: bool) -> SSAValue:
    """Truncate or sign/zero-extend ``x`` to ``target``; identity when equal widths."""
    source = x.type
    assert isinstance(source, IntegerType) and isinstance(target, IntegerType)
    if source.width.data == target.width.data:
        return x
    if source.width.data > target.width.data:
        return e.value(llvm.TruncOp(x, target))
    return e.value((llvm.SExtOp if signed else llvm.ZExtOp)(x, target))


@lowers(arith.IndexCastOp, arith_ext.IndexCastUIOp, arith.ExtSIOp, arith.ExtUIOp, arith.TruncIOp)
def _lower_int_cast(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """With index = i64, every integer cast is a resize (or nothing)."""
    signed = isinstance(op, (arith.IndexCastOp, arith.ExtSIOp))
    return [_resize_int(e, op.operands[0], e.type(op.results[0].type), signed=signed)]


_GENERIC_CASTS: dict[type[Operation], str] = {
    arith.ExtFOp: "llvm.fpext",
    arith.TruncFOp: "llvm.fptrunc",
    arith.SIToFPOp: "llvm.sitofp",
    arith.UIToFPOp: "llvm.uitofp",
    arith.FPToSIOp: "llvm.fptosi",
    arith.FPToUIOp: "llvm.fptoui",
    arith.BitcastOp: "llvm.bitcast",
}


@lowers(*_GENERIC_CASTS)
def _lower_cast(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """Conversions with a one-to-one llvm cast (some are llvm_ext ops)."""
    x = op.operands[0]
    t = e.type(op.results[0].type)
    if isinstance(op, arith.BitcastOp) and x.type == t:
        return [x]
    cast_class = llvm_op(_GENERIC_CASTS[type(op)])
    return [e.value(cast_class.build(operands=[x], result_types=[t]))]


# --------------------------------------------------------------------------- math

_MATH_INTRINSICS: dict[type[Operation], str] = {
    math.SqrtOp: "sqrt",
    math.ExpOp: "exp",
    math.Exp2Op: "exp2",
    math.LogOp: "log",
    math.Log2Op: "log2",
    math.Log10Op: "log10",
    math.SinOp: "sin",
    math.CosOp: "cos",
    math.AbsFOp: "fabs",
    math.PowFOp: "pow",
    math.FmaOp: "fma",
    math.FloorOp: "floor",
    math.CeilOp: "ceil",
    math.RoundOp: "round",
    math.RoundEvenOp: "roundeven",
    math.TruncOp: "trunc",
    math.CopySignOp: "copysign",
    # Intrinsics since LLVM 19/20 (llvmlite 0.50 ships LLVM 22); codegen turns them
    # into the same libm calls but the optimizer knows what they compute.
    math.TanOp: "tan",
    math.AsinOp: "asin",
    math.AcosOp: "acos",
    math.AtanOp: "atan",
    math.Atan2Op: "atan2",
    math.SinhOp: "sinh",
    math.CoshOp: "cosh",
    math.TanhOp: "tanh",
}
"""Float math ops -> ``llvm.<name>.<type>`` (all operands and the result share T)."""

_MATH_LIBM: dict[type[Operation], str] = {
    math.ErfOp: "erf",
    math.CbrtOp: "cbrt",
    math.ExpM1Op: "expm1",
    math.Log1pOp: "log1p",
    math.AsinhOp: "asinh",
    math.AcoshOp: "acosh",
    math.AtanhOp: "atanh",
}
"""Float math ops with no LLVM intrinsic -> C libm calls (``erf``/``erff``)."""


@lowers(*_MATH_INTRINSICS)
def _lower_math_intrinsic(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    t = e.type(op.results[0].type)
    call = e.intrinsic(_MATH_INTRINSICS[type(op)], op.operands, t, [t], _fastmath(op))
    return [call.results[0]]


@lowers(*_MATH_LIBM)
def _lower_math_libm(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """Calls the C library; the declaration is added to the module once."""
    t = e.type(op.results[0].type)
    base = _MATH_LIBM[type(op)]
    if isinstance(t, Float64Type):
        name = base
    elif isinstance(t, Float32Type):
        name = base + "f"
    else:
        raise e.error(
            f"'{op.name}' on {t} has no C library function",
            hint="extend the operand to f32 or f64 first (arith.extf)",
        )
    e.fn.module.declare(name, [t] * len(op.operands), t, e)
    return [e.call(name, op.operands, t, _fastmath(op)).results[0]]


@lowers(math.FPowIOp)
def _lower_fpowi(op: math.FPowIOp, e: Emitter) -> Sequence[SSAValue]:
    """``llvm.pow(x, sitofp n)`` rather than ``llvm.powi``.

    ``llvm.powi`` with a variable exponent becomes a call to compiler-rt's
    ``__powidf2``, which a Python process running the JIT usually lacks (libgcc_s
    is not loaded), and MCJIT then crashes instead of reporting the symbol. ``pow``
    is in libm, is at least as accurate, and LLVM still turns ``pow(x, 2.0)`` into
    a multiply (and other integral constants too under ``afn``).
    """
    t = e.type(op.result.type)
    exponent = e.value(llvm.SIToFPOp(op.rhs, t))
    return [e.intrinsic("pow", [op.lhs, exponent], t, [t], _fastmath(op)).results[0]]


@lowers(math.RsqrtOp)
def _lower_rsqrt(op: math.RsqrtOp, e: Emitter) -> Sequence[SSAValue]:
    """No LLVM intrinsic: ``1 / sqrt(x)`` (with ``afn`` the backend may use rsqrtss)."""
    t = e.type(op.result.type)
    fm = _fastmath(op)
    root = e.intrinsic("sqrt", [op.operand], t, [t], fm).results[0]
    return [e.value(llvm.FDivOp(e.const(t, 1.0), root, fm))]


_INT_BIT_INTRINSICS = {
    math.AbsIOp: "abs",
    math.CountLeadingZerosOp: "ctlz",
    math.CountTrailingZerosOp: "cttz",
    math.CtPopOp: "ctpop",
}


@lowers(*_INT_BIT_INTRINSICS)
def _lower_int_bits(op: Operation, e: Emitter) -> Sequence[SSAValue]:
    """abs/ctlz/cttz take an ``i1 false`` flag: the result for INT_MIN/zero is defined."""
    t = e.type(op.results[0].type)
    args = list(op.operands)
    if not isinstance(op, math.CtPopOp):
        args.append(e.const(i1, 0))
    return [e.intrinsic(_INT_BIT_INTRINSICS[type(op)], args, t, [t]).results[0]]


# --------------------------------------------------------------------------- func


def _result_type(types: Sequence[Attribute]) -> Attribute | None:
    """One result is returned as is, several as a literal struct, none as void."""
    if not types:
        return None
    if len(types) == 1:
        return types[0]
    return llvm.LLVMStructType.from_type_list(list(types))


@lowers(func.CallOp)
def _lower_call(op: func.CallOp, e: Emitter) -> Sequence[SSAValue]:
    """``llvm.call``; several results are unpacked from the returned struct."""
    types = [e.type(r.type) for r in op.results]
    call = e.call(op.callee.root_reference.data, op.arguments, _result_type(types))
    if len(types) <= 1:
        return list(call.results)
    return [
        e.value(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), call.results[0], t))
        for i, t in enumerate(types)
    ]


@lowers(func.ReturnOp)
def _lower_return(op: func.ReturnOp, e: Emitter) -> Sequence[SSAValue]:
    """``llvm.return``; several values are packed into a struct first."""
    values = list(op.arguments)
    if len(values) <= 1:
        e.emit(llvm.ReturnOp(values[0] if values else None))
        return []
    struct_type = _result_type([v.type for v in values])
    packed = e.value(llvm.UndefOp(struct_type))
    for i, v in enumerate(values):
        packed = e.value(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), packed, v))
    e.emit(llvm.ReturnOp(packed))
    return []


# --------------------------------------------------------------------------- cf


@lowers(cf.BranchOp)
def _lower_br(op: cf.BranchOp, e: Emitter) -> Sequence[SSAValue]:
    e.emit(llvm.BrOp(op.successor, *op.arguments))
    return []


@lowers(cf.ConditionalBranchOp)
def _lower_cond_br(op: cf.ConditionalBranchOp, e: Emitter) -> Sequence[SSAValue]:
    e.emit(
        llvm.CondBrOp(
            op.cond, op.then_block, list(op.then_arguments), op.else_block, list(op.else_arguments)
        )
    )
    return []


@lowers(cf.SwitchOp)
def _lower_switch(op: cf.SwitchOp, e: Emitter) -> Sequence[SSAValue]:
    """``llvm.switch``; case values are re-typed to the (lowered) flag type."""
    values = [] if op.case_values is None else [int(v) for v in op.case_values.get_values()]
    e.emit(
        llvm_op("llvm.switch")(
            op.flag,
            op.default_block,
            list(op.default_operands),
            values,
            list(op.case_blocks),
            [list(operands) for operands in op.case_operand],
        )
    )
    return []


@lowers(cf.AssertOp)
def _lower_assert(op: cf.AssertOp, e: Emitter) -> Sequence[SSAValue]:
    """Branch to a block that traps when the condition is false.

    The message is not printed: the JIT has no stderr of its own to print it to
    reliably, and the trap points at the failing function in a debugger.
    """
    block = op.parent_block()
    assert block is not None and block.parent is not None and op.next_op is not None
    rest = block.split_before(op.next_op)
    fail = Block()
    block.parent.add_block(fail)
    fail_ops = Emitter(e.fn, op)
    fail_ops.intrinsic("trap", [], None, [])
    fail_ops.emit(llvm.UnreachableOp())
    fail.add_ops(fail_ops.ops)
    e.emit(llvm.CondBrOp(op.arg, rest, [], fail, []))
    return []


# --------------------------------------------------------------------------- enzyme


@lowers(enzyme.InitOp)
def _lower_init(op: enzyme.InitOp, e: Emitter) -> Sequence[SSAValue]:
    """Accumulators and caches live in entry-block allocas.

    * ``!enzyme.Gradient<T>``: an alloca of T; the init stores zero *at its own
      position*, so re-executing it (e.g. in a loop) resets the accumulator.
    * ``!enzyme.Cache<T>``: an alloca of ``{ptr data, i64 size, i64 capacity}``
      zeroed in the entry block (so the buffer is null until the first push and
      ``free`` before each return is always valid). The init itself resets
      ``size`` to 0, keeping the buffer for reuse if it runs again.
    """
    typ = op.result.type
    if isinstance(typ, enzyme.IndexedCacheType):
        return [_lower_indexed_init(op, e)]
    if isinstance(typ, enzyme.GradientType):
        elem = _elem_type(typ)
        slot = e.fn.entry_alloca(elem)
        e.emit(_StoreOp(e.zero(elem), slot))
        return [slot]
    tape = op.attributes.get("zymase.tape")
    if tape is not None and tape.data == "global":
        # The thread's global tape, shared by augmented and reverse functions
        # (split mode): never reset, never freed by a function.
        e.fn.module.require_global_tape(e)
        return [e.value(llvm.AddressOfOp(GLOBAL_TAPE, PTR))]
    slot = e.fn.entry_alloca(CACHE_STRUCT, zero_init=True)
    e.fn.caches.append(slot)
    size_ptr = e.value(llvm.GEPOp(slot, [0, 1], CACHE_STRUCT))
    e.emit(_StoreOp(e.const(i64, 0), size_ptr))
    return [slot]


@lowers(enzyme.IgnoreDerivativesOp)
def _lower_ignore_derivatives(op: enzyme.IgnoreDerivativesOp, e: Emitter) -> Sequence[SSAValue]:
    return [op.input]  # only AD looks through it


@lowers(enzyme.GetOp)
def _lower_get(op: enzyme.GetOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(_LoadOp(op.gradient, e.type(op.result.type)))]


@lowers(enzyme.SetOp)
def _lower_set(op: enzyme.SetOp, e: Emitter) -> Sequence[SSAValue]:
    e.emit(_StoreOp(op.value, op.gradient))
    return []


@lowers(enzyme.PushOp)
def _lower_push(op: enzyme.PushOp, e: Emitter) -> Sequence[SSAValue]:
    """The runtime helper returns the slot for ``sizeof(T)`` new bytes; store there."""
    e.fn.module.require_cache_runtime(e)
    nbytes = e.size_of(e.type(op.value.type))
    slot = e.call(CACHE_PUSH, [op.cache, nbytes], PTR).results[0]
    e.emit(_StoreOp(op.value, slot))
    return []


@lowers(enzyme.PopOp)
def _lower_pop(op: enzyme.PopOp, e: Emitter) -> Sequence[SSAValue]:
    """The runtime helper drops ``sizeof(T)`` bytes and returns their address."""
    e.fn.module.require_cache_runtime(e)
    t = e.type(op.result.type)
    nbytes = e.size_of(t)
    slot = e.call(CACHE_POP, [op.cache, nbytes], PTR).results[0]
    return [e.value(_LoadOp(slot, t))]


INDEXED_CACHE_STRUCT = llvm.LLVMStructType.from_type_list([PTR, i64])
"""Memory layout of an ``!enzyme.IndexedCache<T>``: ``{ptr data, i64 capacity}``
(capacity in bytes), an entry-block alloca whose address never escapes, so that
LLVM's SROA turns both fields into SSA values (the data pointer is then a plain
register in the loops that read and write the cache)."""

CACHE_RESERVE = "__zymase_cache_reserve"
# Indexed-cache buffers outlive the call: each cache of the module (each site) has a
# spare buffer in a global {i64 lock, ptr block, i64 capacity}, where the function
# leaves its buffer on return and takes it back on the next call. A gradient called
# again (an optimizer loop) then reuses its tape instead of mapping and faulting in
# fresh pages, which for tapes of many MB costs as much as the reverse sweep itself;
# one spare per site (rather than a shared pool) means every cache gets back the
# buffer that already has its size, so no call regrows one. The lock is taken with an
# atomic exchange (no thread-local storage: MCJIT cannot allocate it); a recursive or
# concurrent call finds it taken or empty and allocates its own buffer.
TAPE_SITE = "__zymase_tape_site"
TAPE_BUFFER = "zymase.tape_buffer"  # the attribute zymase.transforms.alias_scopes reads
POOL_TAKE = "__zymase_tape_take"
POOL_GIVE = "__zymase_tape_give"
_SITE_STRUCT = llvm.LLVMStructType.from_type_list([i64, PTR, i64])


def _lower_indexed_init(op: enzyme.InitOp, e: Emitter) -> SSAValue:
    """The handle; its site is a spare-buffer global, or for a ``"heap"`` cache (a
    derivative that is differentiated again: its tape must be memory the engine
    shadows) a name for alias scopes only, the buffer growing by realloc and freed
    on return."""
    handle = e.fn.entry_alloca(INDEXED_CACHE_STRUCT, zero_init=True)
    tape = op.attributes.get("zymase.tape")
    if tape is not None and tape.data == "heap":
        site = e.fn.module.new_heap_tape_name()
    else:
        site = e.fn.module.new_tape_site()
    e.fn.indexed_caches[handle] = (e.type(op.result.type.elem), site)  # type: ignore[attr-defined]
    return handle


@lowers(enzyme.CacheReserveOp)
def _lower_cache_reserve(op: enzyme.CacheReserveOp, e: Emitter) -> Sequence[SSAValue]:
    """Grow the data to ``count * sizeof(T)`` bytes if it is smaller (the runtime
    helper takes and returns the fields by value; the handle stays promotable)."""
    e.fn.module.require_cache_runtime(e)
    count = op.count
    if count.type != i64:
        count = e.value(llvm.SExtOp(count, i64))
    elem, site = e.fn.indexed_caches[op.cache]
    nbytes = e.value(llvm.MulOp(count, e.size_of(e.type(elem))))
    if site.startswith(HEAP_TAPE):
        e.call(CACHE_GROW, [op.cache, nbytes], None)
        return []
    cap_ptr = e.value(llvm.GEPOp(op.cache, [0, 1], INDEXED_CACHE_STRUCT))
    data = e.value(_LoadOp(op.cache, PTR))
    cap = e.value(_LoadOp(cap_ptr, i64))
    site_ptr = e.value(llvm.AddressOfOp(site, PTR))
    grown = e.call(CACHE_RESERVE, [site_ptr, data, cap, nbytes], INDEXED_CACHE_STRUCT).results[0]
    e.emit(_StoreOp(e.value(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [0]), grown, PTR)), op.cache))
    e.emit(_StoreOp(e.value(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [1]), grown, i64)), cap_ptr))
    return []


def _cache_slot(op: Operation, elem: Attribute, e: Emitter) -> SSAValue:
    """Address of slot ``op.index`` of the cache's current data."""
    elem = e.type(elem)
    data = e.value(_LoadOp(op.cache, PTR))
    return e.value(llvm.GEPOp(data, [llvm.GEP_USE_SSA_VAL], elem, ssa_indices=[op.index], inbounds=True))


def _tape_access(access: Operation, op: Operation, e: Emitter) -> Operation:
    """Mark a load/store of an indexed cache's buffer as such: the buffer is memory of
    its own (see zymase.transforms.alias_scopes)."""
    access.attributes[TAPE_BUFFER] = StringAttr(e.fn.indexed_caches[op.cache][1])
    return access


@lowers(enzyme.CacheStoreOp)
def _lower_cache_store(op: enzyme.CacheStoreOp, e: Emitter) -> Sequence[SSAValue]:
    value = op.value
    if isinstance(value, OpResult) and value.owner.name == "llvm.load" and not _from_stack(value.owner):
        # A loop that loads values and stores them to consecutive slots is what LLVM's
        # loop-idiom pass turns into a memcpy call: for the short runs of a tape (GMM's
        # d = 2..10 elements per point and component) the libc call costs more than the
        # copy, 11% of GMM's gradient at d = 2. A freeze of the loaded value (a no-op in
        # machine code; a poison value becomes some fixed value, which is a refinement)
        # is not a load, so the stores stay in the loop and vectorize with it.
        # Not for a stack slot: SROA turns its loads into the values stored, and
        # InstCombine then moves the freeze into their computation, where it hides an
        # accumulator's reduction from the loop vectorizer (`double acc[4]`).
        value = e.value(llvm_ext.FreezeOp(value))
    e.emit(_tape_access(_StoreOp(value, _cache_slot(op, op.value.type, e)), op, e))
    if _tape_stats_enabled():
        e.fn.module.require_cache_runtime(e)
        stats = e.value(llvm.AddressOfOp(TAPE_STATS_COUNTER, PTR))
        old = e.value(_LoadOp(stats, i64))
        size = e.size_of(e.type(op.value.type))
        e.emit(_StoreOp(e.value(llvm.AddOp(old, size)), stats))
    return []


def _from_stack(load: Operation) -> bool:
    """Whether a load reads a stack slot (its address derives from an ``alloca``)."""
    from zymase.analysis.memory import memory_kind

    ptr = load.operands[0]
    while isinstance(ptr, OpResult) and memory_kind(ptr.owner) == "derive":
        ptr = ptr.owner.operands[0]
    return isinstance(ptr, OpResult) and isinstance(ptr.owner, llvm.AllocaOp)


@lowers(enzyme.CacheLoadOp)
def _lower_cache_load(op: enzyme.CacheLoadOp, e: Emitter) -> Sequence[SSAValue]:
    return [e.value(_tape_access(_LoadOp(_cache_slot(op, op.result.type, e), e.type(op.result.type)), op, e))]


# Written as llvm-dialect MLIR text and parsed with zymase.ir.parse_mlir, rather
# than as LLVM IR for zymase.llvm.reader or as Python builder calls: it reads like
# IR, needs nothing beyond the parser we already have (no LLVM-IR round trip), and
# yields exactly the dialect the writer consumes. One byte-generic pair serves every
# element type; both are tiny and internal, so the O2 inliner inlines them at each
# push/pop and the byte count becomes a constant. Growth doubles the capacity
# (at least 256 bytes), so n pushes cost O(n) amortized.
_STRUCT = f"!llvm.struct<(ptr, i64, i64, array<{CACHE_INLINE_BYTES} x i8>)>"
_CACHE_RUNTIME = f"""
builtin.module {{
  llvm.func internal @{CACHE_PUSH}(%cache: !llvm.ptr, %nbytes: i64) -> !llvm.ptr {{
    %size_p = llvm.getelementptr %cache[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %cap_p = llvm.getelementptr %cache[0, 2] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %size = llvm.load %size_p : !llvm.ptr -> i64
    %cap = llvm.load %cap_p : !llvm.ptr -> i64
    %need = llvm.add %size, %nbytes : i64
    {{TAPE_STATS}}
    %full = llvm.icmp "ugt" %need, %cap : i64
    llvm.cond_br %full, ^grow, ^store
  ^grow:
    %inline = llvm.getelementptr %cache[0, 3] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %old = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %zero = llvm.mlir.constant(0 : i64) : i64
    %inline_bytes = llvm.mlir.constant({CACHE_INLINE_BYTES} : i64) : i64
    %fresh = llvm.icmp "eq" %cap, %zero : i64
    %fits = llvm.icmp "ule" %need, %inline_bytes : i64
    %use_inline = llvm.and %fresh, %fits : i1
    llvm.cond_br %use_inline, ^start_inline, ^heap
  ^start_inline:
    llvm.store %inline, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %inline_bytes, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^heap:
    %two = llvm.mlir.constant(2 : i64) : i64
    %min = llvm.mlir.constant(256 : i64) : i64
    %doubled = llvm.mul %cap, %two : i64
    %enough = llvm.call_intrinsic "llvm.umax.i64"(%doubled, %need) : (i64, i64) -> i64
    %newcap = llvm.call_intrinsic "llvm.umax.i64"(%enough, %min) : (i64, i64) -> i64
    %was_inline = llvm.icmp "eq" %old, %inline : !llvm.ptr
    llvm.cond_br %was_inline, ^leave_inline, ^regrow
  ^leave_inline:
    %moved = llvm.call @malloc(%newcap) : (i64) -> !llvm.ptr
    %no = llvm.mlir.constant(false) : i1
    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%moved, %old, %size, %no) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
    llvm.store %moved, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %newcap, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^regrow:
    %new = llvm.call @realloc(%old, %newcap) : (!llvm.ptr, i64) -> !llvm.ptr
    llvm.store %new, %cache : !llvm.ptr, !llvm.ptr
    llvm.store %newcap, %cap_p : i64, !llvm.ptr
    llvm.br ^store
  ^store:
    %data = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %slot = llvm.getelementptr %data[%size] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %need, %size_p : i64, !llvm.ptr
    llvm.return %slot : !llvm.ptr
  }}
  llvm.func internal @{POOL_TAKE}(%site: !llvm.ptr) -> !llvm.struct<(ptr, i64)> {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %null = llvm.mlir.zero : !llvm.ptr
    %u0 = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
    %lock_old = llvm.atomicrmw xchg %site, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %lock_old, %zero : i64
    llvm.cond_br %got, ^take, ^none
  ^take:
    %blockp = llvm.getelementptr %site[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %capp = llvm.getelementptr %site[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %block = llvm.load %blockp : !llvm.ptr -> !llvm.ptr
    %have = llvm.load %capp : !llvm.ptr -> i64
    llvm.store %null, %blockp : !llvm.ptr, !llvm.ptr
    llvm.store %zero, %capp : i64, !llvm.ptr
    %u1 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    %h1 = llvm.insertvalue %block, %u0[0] : !llvm.struct<(ptr, i64)>
    %h2 = llvm.insertvalue %have, %h1[1] : !llvm.struct<(ptr, i64)>
    llvm.return %h2 : !llvm.struct<(ptr, i64)>
  ^none:
    %n1 = llvm.insertvalue %null, %u0[0] : !llvm.struct<(ptr, i64)>
    %n2 = llvm.insertvalue %zero, %n1[1] : !llvm.struct<(ptr, i64)>
    llvm.return %n2 : !llvm.struct<(ptr, i64)>
  }}
  llvm.func internal @{POOL_GIVE}(%site: !llvm.ptr, %block: !llvm.ptr, %cap: i64) {{
    %zero = llvm.mlir.constant(0 : i64) : i64
    %one = llvm.mlir.constant(1 : i64) : i64
    %eight = llvm.mlir.constant(8 : i64) : i64
    %sixteen = llvm.mlir.constant(16 : i64) : i64
    %null = llvm.mlir.zero : !llvm.ptr
    %none = llvm.icmp "eq" %block, %null : !llvm.ptr
    llvm.cond_br %none, ^out, ^lock
  ^lock:
    %lock_old = llvm.atomicrmw xchg %site, %one acquire : !llvm.ptr, i64
    %got = llvm.icmp "eq" %lock_old, %zero : i64
    llvm.cond_br %got, ^check, ^drop
  ^check:
    %blockp = llvm.getelementptr %site[%eight] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    %held = llvm.load %blockp : !llvm.ptr -> !llvm.ptr
    %empty = llvm.icmp "eq" %held, %null : !llvm.ptr
    llvm.cond_br %empty, ^keep, ^busy
  ^keep:
    %capp = llvm.getelementptr %site[%sixteen] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.store %block, %blockp : !llvm.ptr, !llvm.ptr
    llvm.store %cap, %capp : i64, !llvm.ptr
    %u2 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    llvm.br ^out
  ^busy:
    %u1 = llvm.atomicrmw xchg %site, %zero release : !llvm.ptr, i64
    llvm.br ^drop
  ^drop:
    llvm.call @free(%block) : (!llvm.ptr) -> ()
    llvm.br ^out
  ^out:
    llvm.return
  }}
  llvm.func internal @{CACHE_RESERVE}(%site: !llvm.ptr, %data: !llvm.ptr, %cap: i64, %need: i64) -> !llvm.struct<(ptr, i64)> {{
    %u0 = llvm.mlir.undef : !llvm.struct<(ptr, i64)>
    %null = llvm.mlir.zero : !llvm.ptr
    %first = llvm.icmp "eq" %data, %null : !llvm.ptr
    llvm.cond_br %first, ^from_site, ^check(%data, %cap : !llvm.ptr, i64)
  ^from_site:
    %taken = llvm.call @{POOL_TAKE}(%site) : (!llvm.ptr) -> !llvm.struct<(ptr, i64)>
    %tdata = llvm.extractvalue %taken[0] : !llvm.struct<(ptr, i64)>
    %tcap = llvm.extractvalue %taken[1] : !llvm.struct<(ptr, i64)>
    llvm.br ^check(%tdata, %tcap : !llvm.ptr, i64)
  ^check(%d: !llvm.ptr, %c: i64):
    %full = llvm.icmp "ugt" %need, %c : i64
    llvm.cond_br %full, ^grow, ^keep
  ^keep:
    %k0 = llvm.insertvalue %d, %u0[0] : !llvm.struct<(ptr, i64)>
    %k1 = llvm.insertvalue %c, %k0[1] : !llvm.struct<(ptr, i64)>
    llvm.return %k1 : !llvm.struct<(ptr, i64)>
  ^grow:
    %two = llvm.mlir.constant(2 : i64) : i64
    %min = llvm.mlir.constant(256 : i64) : i64
    %doubled = llvm.mul %c, %two : i64
    %enough = llvm.call_intrinsic "llvm.umax.i64"(%doubled, %need) : (i64, i64) -> i64
    %newcap = llvm.call_intrinsic "llvm.umax.i64"(%enough, %min) : (i64, i64) -> i64
    %new = llvm.call @realloc(%d, %newcap) : (!llvm.ptr, i64) -> !llvm.ptr
    %g0 = llvm.insertvalue %new, %u0[0] : !llvm.struct<(ptr, i64)>
    %g1 = llvm.insertvalue %newcap, %g0[1] : !llvm.struct<(ptr, i64)>
    llvm.return %g1 : !llvm.struct<(ptr, i64)>
  }}
{HEAP_TAPE_RUNTIME}  llvm.func internal @{CACHE_POP}(%cache: !llvm.ptr, %nbytes: i64) -> !llvm.ptr {{
    %size_p = llvm.getelementptr %cache[0, 1] : (!llvm.ptr) -> !llvm.ptr, {_STRUCT}
    %size = llvm.load %size_p : !llvm.ptr -> i64
    %rest = llvm.sub %size, %nbytes : i64
    llvm.store %rest, %size_p : i64, !llvm.ptr
    %data = llvm.load %cache : !llvm.ptr -> !llvm.ptr
    %slot = llvm.getelementptr %data[%rest] : (!llvm.ptr, i64) -> !llvm.ptr, i8
    llvm.return %slot : !llvm.ptr
  }}
}}
"""


# With ZYMASE_TAPE_STATS=1 at compile time, every push also adds its size to the
# weak global counter ``__zymase_tape_bytes`` (i64), which a program can declare as
# ``extern long __zymase_tape_bytes;`` and print: the measurement of how many bytes
# reverse mode tapes (bench/ and the issue notes use it). Off by default.
_TAPE_STATS_GLOBAL = """
  llvm.mlir.global weak @__zymase_tape_bytes(0 : i64) {alignment = 8 : i64} : i64
"""
_TAPE_STATS_COUNT = """%stats = llvm.mlir.addressof @__zymase_tape_bytes : !llvm.ptr
    %stats_old = llvm.load %stats : !llvm.ptr -> i64
    %stats_new = llvm.add %stats_old, %nbytes : i64
    llvm.store %stats_new, %stats : i64, !llvm.ptr"""


TAPE_STATS_COUNTER = "__zymase_tape_bytes"


def _tape_stats_enabled() -> bool:
    import os

    return bool(os.environ.get("ZYMASE_TAPE_STATS"))


@functools.lru_cache(maxsize=8)
def _parsed_runtime(text: str, name: str) -> ModuleOp:
    """The runtime module ``text``, parsed once per process (xDSL's parser takes 0.2 s
    on the cache runtime); each user gets a clone."""
    return parse_mlir(text, name)


def _cache_runtime_text() -> str:
    if _tape_stats_enabled():
        text = _CACHE_RUNTIME.replace("{TAPE_STATS}", _TAPE_STATS_COUNT)
        return text.replace("builtin.module {", "builtin.module {" + _TAPE_STATS_GLOBAL, 1)
    return _CACHE_RUNTIME.replace("{TAPE_STATS}", "")


# --------------------------------------------------------------------------- drivers


_UNSUPPORTED_HINTS = {
    "scf": "convert structured control flow to cf first (xDSL's convert-scf-to-cf pass)",
    "memref": "zymase lowers memref.load/store/alloc/alloca/dealloc/subview/cast/dim/copy; "
    "rewrite the op with those",
    "enzyme": "run the enzyme pass (zymase.transforms.enzyme_pass) before lowering",
}


class _ModuleLowering:
    """Module-wide state: the symbol table, external declarations, runtime helpers."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.symbols: dict[str, Operation] = {}
        for op in module.body.block.ops:
            name = op.properties.get("sym_name")
            if name is not None:
                self.symbols[name.data] = op  # type: ignore[attr-defined]
        self._has_cache_runtime = CACHE_PUSH in self.symbols

    def run(self) -> None:
        for op in list(self.module.body.block.ops):
            if isinstance(op, func.FuncOp):
                self._lower_function(op)
            elif isinstance(op, llvm.FuncOp) and op.body.blocks:
                # llvm.func bodies (code read from LLVM IR) may hold the enzyme
                # accumulator/cache ops of generated derivatives, and hand-written
                # MLIR may mix arith/math/cf into them.
                if any(o.dialect_name() != "llvm" for o in op.body.walk()):
                    _FunctionLowering(self, op, op.sym_name.data).run()
            elif op.dialect_name() != "llvm":
                raise ZymaseError(
                    f"no lowering to the llvm dialect for top-level '{op.name}'",
                    construct=op.name,
                    location=location_of(op),
                    hint=_UNSUPPORTED_HINTS.get(op.dialect_name(), "only func.func and llvm ops "
                                                "may appear at module level"),
                )
        if _tape_stats_enabled() and not self._has_cache_runtime:
            self._define_unused_tape_counter()

    def _define_unused_tape_counter(self) -> None:
        """A program that reads the tape counter links even when none of its
        derivatives tapes anything (then the counter stays 0)."""
        declared = self.symbols.get(TAPE_STATS_COUNTER)
        if isinstance(declared, llvm.GlobalOp) and not declared.body.blocks and declared.value is None:
            self._add_runtime("builtin.module {" + _TAPE_STATS_GLOBAL + "}", "<zymase tape counter>")

    def _lower_function(self, fop: func.FuncOp) -> None:
        """func.func -> llvm.func with the C ABI.

        Public functions and declarations get external linkage (callable from the
        host, resolvable by the linker); private definitions get internal linkage so
        that LLVM may inline and drop them.
        """
        name = fop.sym_name.data
        ftype: FunctionType = fop.function_type
        inputs = [lower_type(t, function=name) for t in ftype.inputs]
        outputs = [lower_type(t, function=name) for t in ftype.outputs]
        for t in ftype.outputs:
            if isinstance(t, (enzyme.GradientType, enzyme.CacheType)):
                raise ZymaseError(
                    f"function returns a {t}, which lives on the function's stack",
                    construct=fop.name,
                    function=name,
                    location=location_of(fop),
                    hint="create accumulators and caches in the function that uses them",
                )
        private = fop.sym_visibility is not None and fop.sym_visibility.data == "private"
        linkage = "internal" if private and not fop.is_declaration else "external"
        body = Rewriter.move_region_contents_to_new_regions(fop.body)
        lowered = llvm.FuncOp(
            name,
            llvm.LLVMFunctionType(inputs, _result_type(outputs)),
            linkage=llvm.LinkageAttr(linkage),
            body=body,
        )
        self.module.body.block.insert_op_before(lowered, fop)
        fop.detach()
        fop.erase()
        self.symbols[name] = lowered
        if body.blocks:
            _FunctionLowering(self, lowered, name).run()

    def declare(
        self,
        name: str,
        inputs: Sequence[Attribute],
        output: Attribute | None,
        e: Emitter | None = None,
    ) -> None:
        """Declare an external C function once (``llvm.func @name(...)``, no body).

        An existing symbol of that name is reused if its signature matches.
        """
        wanted = llvm.LLVMFunctionType(list(inputs), output)
        existing = self.symbols.get(name)
        if existing is None:
            decl = llvm.FuncOp(name, wanted, linkage=llvm.LinkageAttr("external"))
            self.module.body.block.add_op(decl)
            self.symbols[name] = decl
            return
        if isinstance(existing, func.FuncOp):
            have = llvm.LLVMFunctionType(
                [lower_type(t) for t in existing.function_type.inputs],
                _result_type([lower_type(t) for t in existing.function_type.outputs]),
            )
        else:
            have = existing.properties.get("function_type")
        if have != wanted:
            message = f"'@{name}' is needed as {wanted} but the module defines it as {have}"
            hint = f"rename the module's own '@{name}'"
            if e is not None:
                raise e.error(message, hint=hint)
            raise ZymaseError(message, hint=hint)

    def require_global_tape(self, e: Emitter) -> None:
        """The thread-local global tape of split-mode derivatives (added once)."""
        if GLOBAL_TAPE in self.symbols:
            return
        tape = llvm.GlobalOp(CACHE_STRUCT, GLOBAL_TAPE, "weak", thread_local_=True,
                             alignment=16, value=None)
        tape.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        self.module.body.block.add_op(tape)
        self.symbols[GLOBAL_TAPE] = tape

    def new_heap_tape_name(self) -> str:
        """A fresh name for a ``"heap"`` indexed cache (alias scopes tell tapes apart by it)."""
        self._heap_tapes = getattr(self, "_heap_tapes", 0) + 1
        return f"{HEAP_TAPE}.{self._heap_tapes}"

    def new_tape_site(self) -> str:
        """A fresh zeroed global holding one cache's spare buffer between calls."""
        n = 0
        while f"{TAPE_SITE}.{n}" in self.symbols:
            n += 1
        name = f"{TAPE_SITE}.{n}"
        site = llvm.GlobalOp(_SITE_STRUCT, name, "internal", alignment=16, value=None)
        site.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
        self.module.body.block.add_op(site)
        self.symbols[name] = site
        return name

    def require_cache_runtime(self, e: Emitter) -> None:
        """Add the cache push/pop helpers (and realloc/free) on first use."""
        self.declare("realloc", [PTR, i64], PTR, e)
        self.declare("malloc", [i64], PTR, e)
        self.declare("free", [PTR], None, e)
        self.declare("malloc_usable_size", [PTR], i64, e)
        if self._has_cache_runtime:
            return
        self._has_cache_runtime = True
        if TAPE_POOL_GLOBAL not in self.symbols:
            pool = llvm.GlobalOp(TAPE_POOL_TYPE, TAPE_POOL_GLOBAL, "internal", alignment=16, value=None)
            pool.attributes["zymase.llvm_init"] = StringAttr("zeroinitializer")
            self.module.body.block.add_op(pool)
            self.symbols[TAPE_POOL_GLOBAL] = pool
        self._add_runtime(_cache_runtime_text(), "<zymase cache runtime>")

    def _add_runtime(self, text: str, name: str) -> None:
        """Add the ops of the llvm-dialect module ``text``; a global the program only
        declares (its own ``extern`` declaration of the stats counter) gives way."""
        runtime = _parsed_runtime(text, name).clone()
        for op in list(runtime.body.block.ops):
            existing = self.symbols.get(op.sym_name.data)  # type: ignore[attr-defined]
            if isinstance(existing, llvm.GlobalOp):
                self.module.body.block.erase_op(existing)
            op.detach()
            self.module.body.block.add_op(op)
            self.symbols[op.sym_name.data] = op  # type: ignore[attr-defined]


class _FunctionLowering:
    """Per-function state: entry-block allocas and the caches to free on return."""

    def __init__(self, module: _ModuleLowering, fn: llvm.FuncOp, name: str):
        self.module = module
        self.fn = fn
        self.name = name
        self.entry = fn.body.blocks[0]
        self.caches: list[SSAValue] = []
        self.indexed_caches: dict[SSAValue, tuple[Attribute, str]] = {}  # handle -> element type, site
        self._alloca_anchor: Operation | None = None

    def run(self) -> None:
        for block in self.fn.body.blocks:
            for arg in list(block.args):
                t = lower_type(arg.type, function=self.name)
                if t != arg.type:
                    Rewriter.replace_value_with_new_type(arg, t)
        for block in _reverse_post_order(self.fn.body.blocks):
            for op in list(block.ops):
                self._lower_op(op)
        if self.caches or self.indexed_caches:
            self.module.declare("free", [PTR], None)
            self._free_caches_before_returns()

    def _lower_op(self, op: Operation) -> None:
        if op.dialect_name() == "llvm":
            return
        lowering = LOWERINGS.get(type(op))
        if lowering is None:
            raise ZymaseError(
                f"no lowering to the llvm dialect for '{op.name}'",
                construct=op.name,
                function=self.name,
                location=location_of(op),
                hint=_UNSUPPORTED_HINTS.get(
                    op.dialect_name(),
                    "rewrite it with func/arith/math/cf ops that zymase can lower",
                ),
            )
        e = Emitter(self, op)
        replacements = lowering(op, e)
        block = op.parent_block()
        assert block is not None
        if e.ops:
            block.insert_ops_before(e.ops, op)
        for old, new in zip(op.results, replacements, strict=True):
            if new.name_hint is None:
                new.name_hint = old.name_hint
            old.replace_all_uses_with(new)
        op.detach()
        op.erase()

    def entry_alloca(self, elem: Attribute, *, zero_init: bool = False) -> SSAValue:
        """An alloca of one ``elem`` at the top of the entry block.

        Entry-block allocas are static (no stack growth inside loops) and promotable
        by mem2reg. With ``zero_init`` the slot is also zeroed right there.
        """
        ops: list[Operation] = []
        if self._alloca_anchor is None:
            one = llvm.ConstantOp(IntegerAttr(1, i64), i64)
            ops.append(one)
            self._one = one.result
        alloca = llvm.AllocaOp(self._one, elem, alignment=_alloc_size(elem) or 8)
        ops.append(alloca)
        if zero_init:
            zero = llvm.ZeroOp.build(result_types=[elem])
            ops += [zero, _StoreOp(zero.results[0], alloca.res)]
        if self._alloca_anchor is None:
            first = self.entry.first_op
            assert first is not None
            self.entry.insert_ops_before(ops, first)
        else:
            self.entry.insert_ops_after(ops, self._alloca_anchor)
        self._alloca_anchor = ops[-1]
        return alloca.res

    def _free_caches_before_returns(self) -> None:
        """Release every heap cache buffer on each exit: ``free(data)`` unless the
        data is still null or the cache's inline buffer (``free(NULL)`` is a no-op)."""
        for block in self.fn.body.blocks:
            term = block.last_op
            if not isinstance(term, llvm.ReturnOp):
                continue
            ops: list[Operation] = []
            for cache in self.caches:
                data = _LoadOp(cache, PTR)
                inline = llvm.GEPOp(cache, [0, 3], CACHE_STRUCT)
                on_heap = llvm_ext.ICmpOp(data.dereferenced_value, inline.result, IntegerAttr(1, i64))
                null = llvm.ZeroOp.build(result_types=[PTR])
                heap = llvm.SelectOp(on_heap.results[0], data.dereferenced_value, null.results[0])
                ops += [data, inline, on_heap, null, heap, llvm.CallOp("free", heap.results[0])]
            for handle, (_, site) in self.indexed_caches.items():  # data: null, the site's or realloc's
                data = _LoadOp(handle, PTR)
                if site.startswith(HEAP_TAPE):
                    ops += [data, llvm.CallOp(TAPE_FREE, data.dereferenced_value)]
                    continue
                cap_ptr = llvm.GEPOp(handle, [0, 1], INDEXED_CACHE_STRUCT)
                cap = _LoadOp(cap_ptr.result, i64)
                site_ptr = llvm.AddressOfOp(site, PTR)
                ops += [data, cap_ptr, cap, site_ptr,
                        llvm.CallOp(POOL_GIVE, site_ptr.result, data.dereferenced_value, cap.dereferenced_value)]
            block.insert_ops_before(ops, term)


def _reverse_post_order(blocks: Iterable[Block]) -> list[Block]:
    """Blocks in reverse post-order from the entry, then any unreachable blocks."""
    blocks = list(blocks)
    if not blocks:
        return []
    seen: set[int] = set()
    order: list[Block] = []
    stack: list[tuple[Block, Iterable[Block]]] = [(blocks[0], iter(_successors(blocks[0])))]
    seen.add(id(blocks[0]))
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if id(succ) not in seen:
                seen.add(id(succ))
                stack.append((succ, iter(_successors(succ))))
                break
        else:
            stack.pop()
            order.append(block)
    order.reverse()
    return order + [b for b in blocks if id(b) not in seen]


def _successors(block: Block) -> Sequence[Block]:
    term = block.last_op
    return list(term.successors) if term is not None else []
