"""Lowering of the standard dialects (``func``, ``arith``, ``math``, ``cf``) to ``llvm``.

Each op class maps to one small lowering function registered in
:data:`zymase.transforms.lowering_registry.LOWERINGS`;
:mod:`zymase.transforms.lower_to_llvm` runs them.
"""

from __future__ import annotations

from collections.abc import Sequence

from zymase.ir import (Attribute, Block, DenseArrayBase, Float32Type, Float64Type, FloatAttr,
                       IntegerAttr, IntegerType, Operation, SSAValue, arith, arith_ext, cf, func,
                       i1, i64, llvm, math)
from zymase.transforms.lowering_registry import LOWERINGS, Emitter, llvm_op, lowers, packed_result_type

# The extended llvm dialect's comparisons and select (why: see lowering_registry.ExtLoadOp).
_ICmpOp = llvm_op("llvm.icmp")
_FCmpOp = llvm_op("llvm.fcmp")
_SelectOp = llvm_op("llvm.select")


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

@lowers(func.CallOp)
def _lower_call(op: func.CallOp, e: Emitter) -> Sequence[SSAValue]:
    """``llvm.call``; several results are unpacked from the returned struct."""
    types = [e.type(r.type) for r in op.results]
    call = e.call(op.callee.root_reference.data, op.arguments, packed_result_type(types))
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
    struct_type = packed_result_type([v.type for v in values])
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
