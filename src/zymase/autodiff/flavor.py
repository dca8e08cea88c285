"""IR flavors: how the AD engine spells arithmetic, control flow and functions.

The engine and the derivative rules are dialect-neutral; a *flavor* is the small
adapter that builds ops of one family of dialects:

* :class:`LLVMFlavor` — the ``llvm`` dialect (code read from LLVM IR),
* :class:`StdFlavor` — ``func``/``arith``/``math``/``cf`` MLIR.

An :class:`Emitter` pairs a flavor with an insertion point; rules call its methods
(``E.mul(a, b)``, ``E.fn("cos", x)``) and the right ops appear. This is what lets one
rule text serve ``arith.mulf`` and ``llvm.fmul``.
"""

from __future__ import annotations

import math as _pymath
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from zymase.autodiff.type_rules import TYPES
from zymase.autodiff.type_rules import is_differentiable_type as _has_type_rule
from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    Block,
    BlockArgument,
    DenseArrayBase,
    Float64Type,
    FloatAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    Operation,
    Region,
    SSAValue,
    VectorType,
    arith,
    cf,
    func,
    i64,
    float_width,
    llvm,
    llvm_ext,
    math,
)
from zymase.ir import fast_ops
from zymase.analysis.op_classes import is_a
from zymase.ir.llvm_eh import InvokeOp

_ACCUMULATION_FLAGS = frozenset({"reassoc", "nsz"})

# LLVM intrinsics the llvm flavor may call by neutral name (all exist in LLVM >= 19).
_LLVM_INTRINSICS = {
    "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
    "exp", "exp2", "log", "log2", "log10", "sqrt", "pow", "fabs", "copysign",
    "floor", "ceil", "trunc", "round", "rint", "fma",
}
_LLVM_RENAME = {"fmin": "minnum", "fmax": "maxnum"}


class Flavor:
    """Dialect-specific construction and inspection of ops (see module doc)."""

    name = "abstract"

    # ----- arithmetic -------------------------------------------------------------
    def const(self, value: float, typ: Attribute) -> Operation: ...
    def iconst(self, value: int, typ: Attribute) -> Operation: ...
    def binary(self, kind: str, a: SSAValue, b: SSAValue) -> Operation: ...
    def neg(self, a: SSAValue) -> Operation: ...
    def select(self, c: SSAValue, a: SSAValue, b: SSAValue) -> Operation: ...
    def fcmp(self, pred: str, a: SSAValue, b: SSAValue) -> Operation: ...
    def icmp_eq(self, a: SSAValue, b: SSAValue) -> Operation: ...
    def fconv(self, v: SSAValue, typ: Attribute) -> Operation: ...
    def sitofp(self, v: SSAValue, typ: Attribute) -> Operation: ...
    def isub(self, a: SSAValue, b: SSAValue) -> Operation: ...
    def iadd(self, a: SSAValue, b: SSAValue) -> Operation: ...
    def fn(self, emitter: "Emitter", name: str, args: Sequence[SSAValue]) -> SSAValue: ...

    # ----- control flow -----------------------------------------------------------
    def br(self, dest: Block, args: Sequence[SSAValue]) -> Operation: ...
    def cond_br(self, c: SSAValue, t: Block, targs, f: Block, fargs) -> Operation: ...
    def switch(self, v: SSAValue, default: Block, dargs, cases: list[int], dests, dest_args) -> Operation: ...
    def ret(self, emitter: "Emitter", values: Sequence[SSAValue], func_op: Operation) -> None: ...
    def is_return(self, op: Operation) -> bool: ...
    def return_values(self, op: Operation) -> list[SSAValue]: ...
    def successor_operands(self, term: Operation) -> list[list[SSAValue]]: ...
    def rebuild_terminator(self, term: Operation, operands: list[list[SSAValue]]) -> Operation: ...

    # ----- functions --------------------------------------------------------------
    def signature(self, fop: Operation) -> tuple[list[Attribute], list[Attribute]]: ...
    def make_function(self, name: str, inputs, outputs, like: Operation) -> Operation: ...
    def call(self, emitter: "Emitter", callee: str, args, result_types) -> list[SSAValue]: ...
    def callee(self, op: Operation) -> str | None: ...
    def call_args(self, op: Operation) -> list[SSAValue]: ...

    def is_constant(self, op: Operation) -> bool: ...

    # ----- fast-math flags ----------------------------------------------------------
    def fast_math(self, op: Operation) -> frozenset[str]:
        """The fast-math flags of ``op`` by LLVM name (``reassoc``, ``nsz``, ...)."""
        return frozenset()

    def set_fast_math(self, op: Operation, flags: frozenset[str]) -> None:
        """Give ``op`` the flags when it is a float add, subtraction, product or negation."""

    def fence(self, v: SSAValue) -> Operation | None:
        """An op passing ``v`` on, that no reassociation looks through; None if none."""
        return None


_DERIVATIVE_FLAGS = frozenset({"reassoc", "nsz", "contract"})


def derivative_flags(primal: frozenset[str]) -> frozenset[str]:
    """The fast-math flags of the arithmetic a rule builds for a primal op with flags
    ``primal``. The programmer's permission for the op extends to its derivative: a sum
    declared order-free (``#pragma clang fp reassociate``, ``-ffast-math``) has order-free
    adjoint terms. ``reassoc`` comes with ``nsz`` because LLVM reassociates only
    operations that have both (its Reassociate pass factors ``q*a + q*b`` into
    ``q*(a + b)`` only then), and the sign of a zero is already insignificant where these
    terms go: into adjoint accumulations, which carry ``nsz`` anyway. Divisions get no
    flags (``set_fast_math`` skips them): with ``reassoc`` LLVM rewrites ``(dy / b) * x``
    as ``(dy * x) / b``, and a loop-invariant reciprocal scaling every element becomes a
    division per element (the normalization's gradient took 1.5x as long). Only the
    flags about order and contraction carry over: a derivative can be infinite or NaN
    where the primal is not (sqrt' at 0, the side of a select not taken), so ``nnan`` and
    ``ninf`` would let LLVM fold away the guards against 0 * inf (``-ffast-math`` primal
    code has them all)."""
    kept = primal & _DERIVATIVE_FLAGS
    return kept | {"nsz"} if "reassoc" in kept else kept


class Emitter:
    """Builds ops of one flavor at an insertion point (before ``anchor`` or at the end
    of ``block``). Returned values are SSA values."""

    def __init__(self, flavor: Flavor, module: Operation):
        self.flavor = flavor
        self.module = module
        self.block: Block | None = None
        self.anchor: Operation | None = None
        # fast-math flags of the float arithmetic built now (see derivative_of)
        self.flags: frozenset[str] = frozenset()

    def at_end(self, block: Block) -> "Emitter":
        self.block, self.anchor = block, None
        return self

    def before(self, op: Operation) -> "Emitter":
        self.block, self.anchor = op.parent_block(), op
        return self

    def insert(self, op: Operation) -> Operation:
        assert self.block is not None
        if self.anchor is None:
            fast_ops.append(self.block, op)
        else:
            fast_ops.insert_before(self.block, op, self.anchor)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.insert(op).results[0]

    @contextmanager
    def derivative_of(self, op: Operation) -> Iterator[None]:
        """Float arithmetic built inside (a rule's adjoint or tangent terms for ``op``)
        carries the flags ``derivative_flags`` derives from ``op``'s fast-math flags."""
        saved = self.flags
        self.flags = derivative_flags(self.flavor.fast_math(op))
        try:
            yield
        finally:
            self.flags = saved

    def float_op(self, op: Operation) -> SSAValue:
        """Insert float arithmetic ``op``, with the flags of the derivative being built."""
        if self.flags:
            self.flavor.set_fast_math(op, self.flags)
        return self.v(op)

    # Arithmetic on SSA values; the result has the type of the first operand.
    def const(self, value: float, typ: Attribute) -> SSAValue:
        return self.v(self.flavor.const(value, typ))

    def iconst(self, value: int, typ: Attribute) -> SSAValue:
        return self.v(self.flavor.iconst(value, typ))

    def const_like(self, value: float, like: SSAValue) -> SSAValue:
        return self.const(value, like.type)

    def zero(self, typ: Attribute) -> SSAValue:
        """The zero shadow of a type, as its type rule builds it (floats: 0.0)."""
        rule = TYPES.lookup(typ)
        return rule.zero(self, typ) if rule is not None else self.const(0.0, typ)

    def add(self, a, b):
        """``a + b``; a differentiable type's rule decides how (adjoint accumulation
        and tangent sums of plug-in types go through here)."""
        rule = TYPES.lookup(a.type)
        return rule.add(self, a, b) if rule is not None else self.float_op(self.flavor.binary("add", a, b))

    def accumulate(self, total, contrib):
        """``total + contrib`` for adjoint accumulation. A sum of adjoint
        contributions has no order the program fixed and no meaningful sign of zero,
        so the LLVM add may reassociate (a reduction in a loop then vectorizes) and
        ignore signed zeros (``0.0 + x`` folds to ``x``: a shadow zeroed by one op
        and accumulated into by the next stays in a register)."""
        out = self.add(total, contrib)
        if not is_a(out, BlockArgument):
            self.flavor.set_fast_math(out.owner, _ACCUMULATION_FLAGS)
        return out

    def fence(self, v):
        """``v`` behind an arithmetic fence, which no reassociation looks through, where
        the flavor has one (autodiff/rounded_partials); else ``v``."""
        op = self.flavor.fence(v)
        return v if op is None else self.v(op)

    def sub(self, a, b):
        return self.float_op(self.flavor.binary("sub", a, b))

    def mul(self, a, b):
        return self.float_op(self.flavor.binary("mul", a, b))

    def div(self, a, b):
        return self.float_op(self.flavor.binary("div", a, b))

    def neg(self, a):
        return self.float_op(self.flavor.neg(a))

    def select(self, c, a, b):
        return self.v(self.flavor.select(c, a, b))

    def fcmp(self, pred: str, a, b):
        return self.v(self.flavor.fcmp(pred, a, b))

    def icmp_eq(self, a, b):
        return self.v(self.flavor.icmp_eq(a, b))

    def fconv(self, v, typ):
        return v if v.type == typ else self.v(self.flavor.fconv(v, typ))

    def sitofp(self, v, typ):
        return self.v(self.flavor.sitofp(v, typ))

    def isub(self, a, b):
        return self.v(self.flavor.isub(a, b))

    def iadd(self, a, b):
        return self.v(self.flavor.iadd(a, b))

    def fn(self, name: str, *args: SSAValue) -> SSAValue:
        """A math function by neutral name (sin, cos, exp, log, sqrt, pow, powi, ...)."""
        return self.flavor.fn(self, name, args)

    def square(self, a):
        return self.mul(a, a)

    def sign(self, x):
        """copysign(1, x): the derivative of |x| away from zero."""
        return self.fn("copysign", self.const_like(1.0, x), x)

    def call(self, callee: str, args, result_types) -> list[SSAValue]:
        return self.flavor.call(self, callee, args, result_types)


#: the ops the LLVM flavor's is_constant holds for
_CONSTANT_CLASSES = (llvm.ConstantOp, llvm.ZeroOp, llvm.UndefOp, llvm.AddressOfOp)


def _float_attr(value: float, typ: Attribute) -> Attribute:
    """A float constant of type ``typ``; for a vector of floats, the splat. One object
    per value (by its bits: 0.0 and -0.0 apart) and type: derivatives use the same few
    constants (0, 1, 2, 0.5 ...) again and again, and building one verifies it; attributes
    are immutable, so ops share them. (NaNs, whose payloads ``==`` cannot tell apart, are
    built each time.)"""
    value = float(value)
    if value != value:
        return _new_float_attr(value, typ)
    key = (value.hex(), typ)
    attr = _FLOAT_ATTRS.get(key)
    if attr is None:
        if len(_FLOAT_ATTRS) >= _MAX_FLOAT_ATTRS:
            _FLOAT_ATTRS.clear()
        attr = _FLOAT_ATTRS[key] = _new_float_attr(value, typ)
    return attr


#: _float_attr's attributes, by (value.hex(), type); bounded (a program's own constants
#: are many, the derivatives' are few)
_FLOAT_ATTRS: dict[tuple[str, Attribute], Attribute] = {}
_MAX_FLOAT_ATTRS = 4096


def _new_float_attr(value: float, typ: Attribute) -> Attribute:
    from zymase.ir import DenseIntOrFPElementsAttr

    if isinstance(typ, VectorType):
        return DenseIntOrFPElementsAttr.from_list(typ, [value] * typ.get_shape()[0])
    return FloatAttr(value, typ)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------
# llvm dialect
# ----------------------------------------------------------------------------------


def intrinsic_base(name: str) -> str:
    """``llvm.sin.f64`` -> ``sin``; ``llvm.powi.f64.i32`` -> ``powi``;
    ``llvm.vector.reduce.fadd.v4f64`` -> ``vector.reduce.fadd``."""
    parts = name.split(".")[1:]
    keep: list[str] = []
    for p in parts:
        if _is_type_mangle(p):
            break
        keep.append(p)
    return ".".join(keep)


def _is_type_mangle(p: str) -> bool:
    if p in ("f16", "f32", "f64", "f80", "f128", "bf16", "ppcf128", "isVoid"):
        return True
    if p[:1] in ("i", "p") and p[1:].isdigit():
        return True
    if p.startswith(("v", "nxv")) and any(ch.isdigit() for ch in p) and p[-1].isdigit():
        return True
    return False


def _mangle(t: Attribute) -> str:
    if isinstance(t, IntegerType):
        return f"i{t.width.data}"
    if isinstance(t, VectorType):  # llvm.copysign.v2f64 (the sign of |x|'s lanes)
        return f"v{t.get_shape()[0]}{_mangle(t.element_type)}"
    # by class: str(t) runs xDSL's printer, once per fence and intrinsic AD emits
    return _FLOAT_MANGLES[type(t).__name__]


#: the float types' suffixes in intrinsic names, by xDSL class name
_FLOAT_MANGLES = {"Float16Type": "f16", "Float32Type": "f32", "Float64Type": "f64", "Float80Type": "f80",
                  "BFloat16Type": "bf16"}


class LLVMFlavor(Flavor):
    name = "llvm"

    _BIN = {"add": llvm.FAddOp, "sub": llvm.FSubOp, "mul": llvm.FMulOp, "div": llvm.FDivOp}

    # (the ops AD emits most are built by zymase.ir.fast_ops: the same ops, without
    # IRDL's generic argument matching)
    def const(self, value, typ):
        return fast_ops.constant(_float_attr(value, typ), typ)

    def iconst(self, value, typ):
        return fast_ops.constant(fast_ops.int_attr(value, typ), typ)

    def binary(self, kind, a, b):
        return fast_ops.float_arith(self._BIN[kind], a, b)

    def neg(self, a):
        a = SSAValue.get(a)
        return llvm.FNegOp.create(operands=[a], result_types=[a.type], properties={"fastmathFlags": fast_ops.NO_FASTMATH})

    def select(self, c, a, b):
        return fast_ops.select(llvm.SelectOp, c, a, b)

    def fcmp(self, pred, a, b):
        # (the extended op: a compare of vectors gives a vector of i1, as the
        # lane-wise rules of vectors need, rules/scalar.py fmax)
        return fast_ops.fcmp(SSAValue.get(a), SSAValue.get(b),
                             pred if isinstance(pred, IntegerAttr) else fast_ops.fcmp_predicate(pred))

    def icmp_eq(self, a, b):
        return fast_ops.icmp(llvm.ICmpOp, a, b, fast_ops.int_attr(0, i64))

    def fconv(self, v, typ):
        wider = float_width(typ) > float_width(v.type)
        return llvm.FPExtOp(v, typ) if wider else llvm.FPTruncOp(v, typ)

    def sitofp(self, v, typ):
        return llvm.SIToFPOp(v, typ)

    def isub(self, a, b):
        return fast_ops.int_arith(llvm.SubOp, a, b)

    def iadd(self, a, b):
        return fast_ops.int_arith(llvm.AddOp, a, b)

    def fn(self, emitter, name, args):
        t = args[0].type
        iname = _LLVM_RENAME.get(name, name)
        if name == "powi":
            op = llvm.CallIntrinsicOp(
                f"llvm.powi.{_mangle(t)}.{_mangle(args[1].type)}", list(args), [t]
            )
            return emitter.v(op)
        if iname in _LLVM_INTRINSICS or iname in ("minnum", "maxnum"):
            return emitter.v(fast_ops.call_intrinsic(f"llvm.{iname}.{_mangle(t)}", [SSAValue.get(a) for a in args], [t]))
        if name == "digamma":  # not in libm: zymase defines it (in double) in the module
            from zymase.autodiff.special import ensure_digamma

            x = args[0] if str(t) == "f64" else emitter.v(self.fconv(args[0], Float64Type()))
            psi = emitter.v(llvm.CallOp(ensure_digamma(emitter.module), x, return_type=Float64Type()))
            return psi if str(t) == "f64" else emitter.v(self.fconv(psi, t))
        # Everything else is a libm call, declared once per module.
        cname = name + {"f32": "f", "f80": "l"}.get(str(t), "")
        self._declare(emitter.module, cname, [a.type for a in args], t)
        return emitter.v(fast_ops.call(cname, args, t))

    def _declare(self, module, name, inputs, output):
        from zymase.autodiff.module_symbols import find_symbol

        found = find_symbol(module, name)  # (None only when no op has the name)
        if isinstance(found, llvm.FuncOp) or found is not None and any(
                isinstance(op, llvm.FuncOp) and op.sym_name.data == name for op in module.body.block.ops):
            return
        decl = llvm.FuncOp(
            name, llvm.LLVMFunctionType(inputs, output), linkage=llvm.LinkageAttr("external")
        )
        module.body.block.add_op(decl)

    # control flow
    def br(self, dest, args):
        return fast_ops.br(dest, args)

    def cond_br(self, c, t, targs, f, fargs):
        return fast_ops.cond_br(c, t, list(targs), f, list(fargs))

    def switch(self, v, default, dargs, cases, dests, dest_args):
        return llvm_ext.SwitchOp(v, default, list(dargs), list(cases), list(dests), [list(a) for a in dest_args])

    def ret(self, emitter, values, func_op):
        if not values:
            emitter.insert(llvm.ReturnOp())
        elif len(values) == 1:
            emitter.insert(llvm.ReturnOp(values[0]))
        else:
            st = llvm.LLVMStructType.from_type_list([v.type for v in values])
            agg = emitter.v(llvm.UndefOp(st))
            for i, v in enumerate(values):
                agg = emitter.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), agg, v))
            emitter.insert(llvm.ReturnOp(agg))

    def is_return(self, op):
        return is_a(op, llvm.ReturnOp)

    def return_values(self, op):
        return [op.arg] if op.arg is not None else []

    def successor_operands(self, term):
        # (the branches by exact type first, read from the operands and the segment sizes
        # as xDSL's accessors read them: its accessors resolve the segments anew per call,
        # and the generators ask for every terminator's operands again and again)
        kind = type(term)
        if kind is llvm.BrOp:
            return [list(term.operands)]
        if kind is llvm.CondBrOp:
            cond, then, other = term.properties["operandSegmentSizes"].get_values()
            operands = list(term.operands)
            return [operands[cond:cond + then], operands[cond + then:cond + then + other]]
        if isinstance(term, llvm.BrOp):
            return [list(term.arguments)]
        if isinstance(term, llvm.CondBrOp):
            return [list(term.then_arguments), list(term.else_arguments)]
        if isinstance(term, llvm_ext.SwitchOp):
            return [list(term.default_operands)] + [list(c) for c in term.case_operand_lists()]
        if isinstance(term, InvokeOp):  # C++ code the engine does not differentiate
            return [list(term.normal_dest_operands), list(term.unwind_dest_operands)]
        return [[] for _ in term.successors]

    def rebuild_terminator(self, term, operands):
        if isinstance(term, llvm.BrOp):
            new = fast_ops.br(term.successor, operands[0])
        elif isinstance(term, llvm.CondBrOp):
            new = fast_ops.cond_br(term.cond, term.then_block, operands[0], term.else_block, operands[1])
        elif isinstance(term, llvm_ext.SwitchOp):
            new = llvm_ext.SwitchOp(
                term.value, term.default_destination, operands[0], term.case_value_list(),
                list(term.case_destinations), operands[1:],
            )
        else:
            raise ZymaseError(f"cannot differentiate through terminator '{term.name}'", construct=term.name)
        new.location = term.location
        new.attributes.update(term.attributes)  # the loop hints of a primal latch stay with it
        return new

    # functions
    def signature(self, fop):
        ft = fop.function_type
        out = ft.output
        outputs = [] if isinstance(out, llvm.LLVMVoidType) else [out]
        return list(ft.inputs.data), outputs

    def make_function(self, name, inputs, outputs, like):
        if not outputs:
            out = llvm.LLVMVoidType()
        elif len(outputs) == 1:
            out = outputs[0]
        else:
            out = llvm.LLVMStructType.from_type_list(outputs)
        fop = llvm.FuncOp(name, llvm.LLVMFunctionType(inputs, out), linkage=llvm.LinkageAttr("internal"))
        block = Block(arg_types=inputs)
        fop.body.add_block(block)
        for key in ("target_cpu", "target_features", "tune_cpu"):
            if key in like.properties:
                fop.properties[key] = like.properties[key]
        if "passthrough" in like.properties:
            fop.properties["passthrough"] = _filter_passthrough(like.properties["passthrough"])
        return fop

    def call(self, emitter, callee, args, result_types):
        def make(return_type=None):
            if isinstance(callee, str):  # (fast_ops.call makes the op llvm.CallOp makes)
                return fast_ops.call(callee, args, return_type)
            return llvm.CallOp(callee, *args, return_type=return_type)

        if not result_types:
            emitter.insert(make())
            return []
        if len(result_types) == 1:
            return [emitter.v(make(result_types[0]))]
        st = llvm.LLVMStructType.from_type_list(result_types)
        agg = emitter.v(make(st))
        return [
            emitter.v(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [i]), agg, t))
            for i, t in enumerate(result_types)
        ]

    def callee(self, op):
        # (by class, once: asked of every op by defined_function; analysis/op_classes.py)
        if is_a(op, llvm.CallOp) and op.callee is not None:
            return op.callee.root_reference.data
        return None

    def call_args(self, op):
        return list(op.args)

    def is_constant(self, op):
        # (by class, once: asked for every operand fetched or cut; analysis/op_classes.py)
        return is_a(op, _CONSTANT_CLASSES)

    def fast_math(self, op):
        attr = op.properties.get("fastmathFlags")
        return frozenset(str(f) for f in attr.data) if isinstance(attr, llvm.FastMathAttr) else frozenset()

    def set_fast_math(self, op, flags):
        if isinstance(op, (llvm.FAddOp, llvm.FSubOp, llvm.FMulOp, llvm.FNegOp)):
            op.properties["fastmathFlags"] = llvm.FastMathAttr(tuple(llvm.FastMathFlag(f) for f in sorted(flags)))

    def fence(self, v):
        return fast_ops.call_intrinsic(f"llvm.arithmetic.fence.{_mangle(v.type)}", [v], [v.type])


def _filter_passthrough(attr):
    """Keep target attributes on generated functions, drop attributes that would be
    wrong for a derivative (e.g. memory effects, noinline on the primal)."""
    from zymase.ir import ArrayAttr, StringAttr

    kept = []
    for a in attr.data:
        key = a.data[0].data if isinstance(a, ArrayAttr) else a.data
        if isinstance(key, str) and (key.startswith("target") or key in ("nounwind", "tune-cpu", "frame-pointer")):
            kept.append(a)
        elif isinstance(a, StringAttr) and a.data == "nounwind":
            kept.append(a)
    return ArrayAttr(kept)


# ----------------------------------------------------------------------------------
# func / arith / math / cf
# ----------------------------------------------------------------------------------

# (class names: the C and Numba paths do not import the math dialect, zymase/ir/on_first_use.py)
_MATH_OPS = {
    "sin": "SinOp", "cos": "CosOp", "tan": "TanOp", "exp": "ExpOp",
    "exp2": "Exp2Op", "log": "LogOp", "log2": "Log2Op", "log10": "Log10Op",
    "sqrt": "SqrtOp", "fabs": "AbsFOp", "atan": "AtanOp", "tanh": "TanhOp",
    "sinh": "SinhOp", "cosh": "CoshOp", "asin": "AsinOp", "acos": "AcosOp",
    "erf": "ErfOp", "cbrt": "CbrtOp", "expm1": "ExpM1Op", "log1p": "Log1pOp",
    "floor": "FloorOp", "ceil": "CeilOp", "trunc": "TruncOp", "round": "RoundOp",
}
_MATH_BINARY = {"pow": "PowFOp", "copysign": "CopySignOp", "atan2": "Atan2Op"}
_CMPF = {"olt": 4, "ole": 5, "ogt": 2, "oge": 3, "oeq": 1, "one": 6, "une": 13, "ult": 12}


class StdFlavor(Flavor):
    name = "std"

    _BIN = {"add": "AddfOp", "sub": "SubfOp", "mul": "MulfOp", "div": "DivfOp"}  # (arith's, by name: as _MATH_OPS)

    def const(self, value, typ):
        return arith.ConstantOp(_float_attr(value, typ), typ)

    def iconst(self, value, typ):
        return arith.ConstantOp(IntegerAttr(value, typ), typ)

    def binary(self, kind, a, b):
        return getattr(arith, self._BIN[kind])(a, b)

    def neg(self, a):
        return arith.NegfOp(a)

    def select(self, c, a, b):
        return arith.SelectOp(c, a, b)

    def fcmp(self, pred, a, b):
        return arith.CmpfOp(a, b, pred)

    def icmp_eq(self, a, b):
        return arith.CmpiOp(a, b, "eq")

    def fconv(self, v, typ):
        if float_width(typ) > float_width(v.type):
            return arith.ExtFOp(v, typ)
        return arith.TruncFOp(v, typ)

    def sitofp(self, v, typ):
        return arith.SIToFPOp(v, typ)

    def isub(self, a, b):
        return arith.SubiOp(a, b)

    def iadd(self, a, b):
        return arith.AddiOp(a, b)

    def fn(self, emitter, name, args):
        if name in _MATH_OPS:
            return emitter.v(getattr(math, _MATH_OPS[name])(args[0]))
        if name in _MATH_BINARY:
            return emitter.v(getattr(math, _MATH_BINARY[name])(args[0], args[1]))
        if name == "powi":
            return emitter.v(math.FPowIOp(args[0], args[1]))
        if name in ("fmin", "fmax"):
            cls = arith.MinnumfOp if name == "fmin" else arith.MaxnumfOp
            return emitter.v(cls(args[0], args[1]))
        if name == "fma":
            return emitter.add(emitter.mul(args[0], args[1]), args[2])
        if name == "digamma":  # lgamma's and tgamma's derivatives: zymase defines it (in f64)
            from zymase.autodiff.special import ensure_digamma

            t = args[0].type
            x = args[0] if str(t) == "f64" else emitter.v(self.fconv(args[0], Float64Type()))
            psi = emitter.v(func.CallOp(ensure_digamma(emitter.module, "func"), [x], [Float64Type()]))
            return psi if str(t) == "f64" else emitter.v(self.fconv(psi, t))
        raise ZymaseError(f"no math op for '{name}' in func/arith/math", construct=name)

    def br(self, dest, args):
        return cf.BranchOp(dest, *args)

    def cond_br(self, c, t, targs, f, fargs):
        return cf.ConditionalBranchOp(c, t, list(targs), f, list(fargs))

    def switch(self, v, default, dargs, cases, dests, dest_args):
        from zymase.ir import DenseIntOrFPElementsAttr

        values = DenseIntOrFPElementsAttr.from_list(VectorType(v.type, [len(cases)]), cases) if cases else None
        return cf.SwitchOp(v, default, list(dargs), values, list(dests), [list(a) for a in dest_args])

    def ret(self, emitter, values, func_op):
        emitter.insert(func.ReturnOp(*values))

    def is_return(self, op):
        return isinstance(op, func.ReturnOp)

    def return_values(self, op):
        return list(op.arguments)

    def successor_operands(self, term):
        if isinstance(term, cf.BranchOp):
            return [list(term.arguments)]
        if isinstance(term, cf.ConditionalBranchOp):
            return [list(term.then_arguments), list(term.else_arguments)]
        if isinstance(term, cf.SwitchOp):
            return [list(term.default_operands)] + [list(c) for c in term.case_operand]
        return [[] for _ in term.successors]

    def rebuild_terminator(self, term, operands):
        if isinstance(term, cf.BranchOp):
            new = cf.BranchOp(term.successor, *operands[0])
        elif isinstance(term, cf.ConditionalBranchOp):
            new = cf.ConditionalBranchOp(term.cond, term.then_block, operands[0], term.else_block, operands[1])
        elif isinstance(term, cf.SwitchOp):
            new = cf.SwitchOp(
                term.flag, term.default_block, operands[0], term.case_values,
                list(term.case_blocks), operands[1:],
            )
        else:
            raise ZymaseError(f"cannot differentiate through terminator '{term.name}'", construct=term.name)
        new.location = term.location
        new.attributes.update(term.attributes)  # the loop hints of a primal latch stay with it
        return new

    def signature(self, fop):
        ft = fop.function_type
        return list(ft.inputs.data), list(ft.outputs.data)

    def make_function(self, name, inputs, outputs, like):
        fop = func.FuncOp(name, FunctionType.from_lists(inputs, outputs), Region(Block(arg_types=inputs)), visibility="private")
        return fop

    def call(self, emitter, callee, args, result_types):
        op = emitter.insert(func.CallOp(callee, list(args), list(result_types)))
        return list(op.results)

    def callee(self, op):
        if isinstance(op, func.CallOp):
            return op.callee.root_reference.data
        return None

    def call_args(self, op):
        return list(op.arguments)

    def is_constant(self, op):
        return isinstance(op, arith.ConstantOp)

    def fast_math(self, op):
        attr = op.properties.get("fastmath")
        return frozenset(attr.data) if isinstance(attr, arith.FastMathFlagsAttr) else frozenset()

    def set_fast_math(self, op, flags):
        if isinstance(op, (arith.AddfOp, arith.SubfOp, arith.MulfOp, arith.NegfOp)):
            op.properties["fastmath"] = arith.FastMathFlagsAttr(tuple(sorted(flags)))

    def fence(self, v):
        # arith has no fence, and its fastmath<reassoc> becomes LLVM's reassoc when lowered
        # (zymase's lower-to-llvm, mlir-opt's --convert-arith-to-llvm): the LLVM dialect's
        # call of the intrinsic sits among arith ops, which both lowerings leave as it is
        return fast_ops.call_intrinsic(f"llvm.arithmetic.fence.{_mangle(v.type)}", [v], [v.type])


LLVM = LLVMFlavor()
STD = StdFlavor()


def flavor_of(fop: Operation) -> Flavor:
    """The flavor of a function op."""
    if isinstance(fop, llvm.FuncOp):
        return LLVM
    if isinstance(fop, func.FuncOp):
        return STD
    raise ZymaseError(f"cannot differentiate a '{fop.name}'", construct=fop.name)


def is_differentiable_type(t: Attribute) -> bool:
    """Types that carry derivatives: those with a type rule (the floats by default)."""
    return _has_type_rule(t)


LN2 = _pymath.log(2.0)
LN10 = _pymath.log(10.0)
