"""Enzyme's C interface: ``__enzyme_autodiff`` / ``__enzyme_fwddiff`` call sites become
``enzyme.autodiff`` / ``enzyme.fwddiff`` ops, with the C calling convention of the
call site (argument promotion, struct returns, sret) adapted around them.

Semantics follow Enzyme:

* markers ``enzyme_const``, ``enzyme_out``, ``enzyme_dup``, ``enzyme_dupnoneed`` are
  globals whose value (or address) precedes the argument they describe;
* reverse mode without marker: a float argument is active (its derivative is
  returned), a pointer is duplicated (followed by its shadow), an integer constant;
  the float result is seeded with 1.0; several derivatives come back as a struct in
  argument order;
* forward mode without marker: a float argument is followed by its tangent; the
  result is the directional derivative.
"""

from __future__ import annotations

from dataclasses import dataclass

from zymase.errors import ZymaseError
from zymase.ir import (
    Attribute,
    DenseArrayBase,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    VectorType,
    float_width,
    i64,
    is_float_type,
    llvm,
    location_of,
)
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import Activity

MARKERS = {
    "enzyme_const": "const",
    "enzyme_out": "out",
    "enzyme_dup": "dup",
    "enzyme_dupnoneed": "dupnoneed",
}


@dataclass
class _Site:
    call: Operation
    mode: str  # "rev" or "fwd"
    marker_fn: str
    caller: str


def _callee_name(op: Operation) -> str | None:
    if isinstance(op, llvm.CallOp) and op.callee is not None:
        return op.callee.root_reference.data
    return None


def _addressof_name(v: SSAValue) -> str | None:
    owner = v.owner
    if isinstance(owner, llvm.AddressOfOp):
        return owner.global_name.root_reference.data
    return None


def _marker_of(v: SSAValue) -> str | None:
    """The marker a call argument stands for: the value of ``@enzyme_dup`` or its address."""
    name = _addressof_name(v)
    if name is None and isinstance(v.owner, llvm.LoadOp):
        name = _addressof_name(v.owner.ptr)
    return MARKERS.get(name) if name is not None else None


def protect_marker_calls(ll_text: str) -> str:
    """Mark the declarations of ``__enzyme_*`` functions ``nomerge`` in LLVM IR text.

    The pre-AD pipeline runs before the call sites are lowered; without this,
    SimplifyCFG merges two calls in different branches into one whose function or
    markers are phis (``cond ? f : g``), which no longer name what to differentiate.
    """
    out = []
    for line in ll_text.splitlines():
        if line.startswith("declare") and ("@__enzyme_autodiff" in line or "@__enzyme_fwddiff" in line):
            start = line.index("(", line.index("@__enzyme_"))
            depth = 0
            for i in range(start, len(line)):
                if line[i] == "(":
                    depth += 1
                elif line[i] == ")":
                    depth -= 1
                    if depth == 0:
                        line = line[: i + 1] + " nomerge" + line[i + 1 :]
                        break
        out.append(line)
    return "\n".join(out) + "\n"


def find_sites(module: ModuleOp) -> list[_Site]:
    sites = []
    for fop in module.body.block.ops:
        if not isinstance(fop, llvm.FuncOp):
            continue
        for op in fop.walk():
            name = _callee_name(op)
            if name is None:
                continue
            if "__enzyme_autodiff" in name:
                sites.append(_Site(op, "rev", name, fop.sym_name.data))
            elif "__enzyme_fwddiff" in name:
                sites.append(_Site(op, "fwd", name, fop.sym_name.data))
    return sites


def lower_markers(module: ModuleOp) -> int:
    """Rewrite every marker call site; returns how many were rewritten."""
    functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    sites = find_sites(module)
    for site in sites:
        _lower_site(site, functions)
    _drop_dead_marker_globals(module)
    return len(sites)


def _err(site: _Site, message: str, hint: str) -> ZymaseError:
    return ZymaseError(
        message,
        construct=f"call @{site.marker_fn}",
        function=site.caller,
        location=location_of(site.call),
        hint=hint,
    )


def _lower_site(site: _Site, functions: dict[str, Operation]) -> None:
    call = site.call
    args = list(call.args)
    sret = None
    # An sret return: the hidden result pointer comes before the function.
    if len(args) >= 2 and call.returned is None and _addressof_name(args[0]) not in functions and _addressof_name(args[1]) in functions:
        sret, args = args[0], args[1:]
    if not args:
        raise _err(site, "missing function argument", f"call it as {site.marker_fn}((void*)f, args...)")
    fname = _addressof_name(args[0])
    fop = functions.get(fname) if fname else None
    if fop is None:
        what = f"'@{fname}'" if fname else "a value that is not a function"
        raise _err(
            site,
            f"the first argument of {site.marker_fn} must be a function defined in this file, got {what}",
            "pass the function itself, e.g. __enzyme_autodiff((void*)f, x)",
        )
    if not fop.body.blocks:
        raise _err(
            site,
            f"cannot differentiate '{fname}': only its declaration is in this file",
            "define the function in the same translation unit",
        )
    fn_inputs = list(fop.function_type.inputs.data)
    fn_out = fop.function_type.output
    has_result = not isinstance(fn_out, llvm.LLVMVoidType)
    if (
        site.mode == "rev"
        and isinstance(fn_out, llvm.LLVMPointerType)
        and call.returned is not None
        and call.returned.uses
    ):
        raise _err(
            site,
            f"'{fname}' returns a pointer, and reverse mode returns only derivatives",
            "use the pointer's shadow (the enzyme_dup argument) instead, or __enzyme_fwddiff, "
            "which returns the shadow of a returned pointer",
        )

    if has_result and _is_float_vector(fn_out):
        raise _err(site, f"the result of '{fname}' is {_vector_in_c(fn_out)}, which zymase does not "
                   "differentiate: its derivative would be taken as zero",
                   "return the components through a pointer argument (enzyme_dup) instead")

    b = _Builder(call)
    operands: list[SSAValue] = []
    acts: list[Activity] = []
    rest = args[1:]
    pos = 0
    for i, ptype in enumerate(fn_inputs):
        marker = None
        if pos < len(rest):
            marker = _marker_of(rest[pos])
            if marker is not None:
                pos += 1
        if pos >= len(rest):
            if marker is not None:
                raise _err(site, f"marker enzyme_{marker} is not followed by an argument",
                           f"'{fname}' takes {len(fn_inputs)} arguments; put the marker right before the value it describes")
            raise _err(site, f"too few arguments for '{fname}': it takes {len(fn_inputs)}, argument {i + 1} is missing",
                       "pass every argument of the function (and a shadow after each enzyme_dup pointer)")
        val = b.coerce(rest[pos], ptype, site, i)
        pos += 1
        act = _activity(site, marker, ptype, i, fname)
        operands.append(val)
        acts.append(act)
        if act.is_dup or (site.mode == "fwd" and act.is_active):
            if pos >= len(rest):
                raise _err(site, f"argument {i + 1} of '{fname}' needs a {'shadow' if act.is_dup else 'tangent'} after it",
                           "pass the derivative argument right after the primal one")
            operands.append(b.coerce(rest[pos], ptype, site, i))
            pos += 1
    if pos < len(rest):
        raise _err(site, f"too many arguments for '{fname}': it takes {len(fn_inputs)}",
                   "check the markers: enzyme_dup arguments take a shadow, enzyme_const ones do not")

    if site.mode == "rev":
        ret_acts = []
        if has_result:
            if is_float_type(fn_out):
                ret_acts = [Activity.ACTIVENONEED]
                operands.append(b.fconst(1.0, fn_out))
            else:
                ret_acts = [Activity.CONSTNONEED]
        out_types = [t for t, a in zip(fn_inputs, acts) if a.is_active]
        fwd_acts = acts
        op = ez.AutoDiffOp(fname, operands, out_types, fwd_acts, ret_acts)
    else:
        fwd_acts = [Activity.DUP if a.is_active else a for a in acts]
        ret_acts, out_types = [], []
        if has_result:
            if is_float_type(fn_out) or isinstance(fn_out, llvm.LLVMPointerType):
                # a float result's tangent; a returned pointer's shadow
                ret_acts, out_types = [Activity.DUPNONEED], [fn_out]
            else:
                ret_acts = [Activity.CONSTNONEED]
        op = ez.FwdDiffOp(fname, operands, out_types, fwd_acts, ret_acts)
    op.location = call.location
    b.insert(op)
    b.deliver(list(op.results), sret, site)
    call.parent_block().erase_op(call)


def _activity(site: _Site, marker: str | None, ptype: Attribute, i: int, fname: str) -> Activity:
    is_ptr = isinstance(ptype, llvm.LLVMPointerType)
    if marker == "const":
        return Activity.CONST
    if _is_float_vector(ptype):
        raise _err(site, f"argument {i + 1} of '{fname}' is {_vector_in_c(ptype)} passed by value, which "
                   "zymase does not differentiate: its derivative would be taken as zero",
                   "pass the vector through memory (a pointer with enzyme_dup), or mark it enzyme_const")
    if marker in ("dup", "dupnoneed"):
        if not (is_ptr or (site.mode == "fwd" and is_float_type(ptype))):
            raise _err(site, f"enzyme_{marker} on argument {i + 1} of '{fname}', which is not a pointer",
                       "use enzyme_dup for pointers; a float argument is active by default")
        return Activity.DUP if marker == "dup" else Activity.DUPNONEED
    if marker == "out":
        if not is_float_type(ptype):
            raise _err(site, f"enzyme_out on argument {i + 1} of '{fname}', which is not a float",
                       "enzyme_out marks an active floating-point argument")
        return Activity.ACTIVE
    if is_float_type(ptype):
        return Activity.ACTIVE
    if is_ptr:
        return Activity.DUP
    return Activity.CONST


def _is_float_vector(t: Attribute) -> bool:
    """A vector of floating-point values (``vector_size`` types in C): no derivative
    rules handle them, so as an argument or result of a marker call they would
    silently count as constant (issue 23 item 4)."""
    return isinstance(t, VectorType) and is_float_type(t.element_type)


def _vector_in_c(t: VectorType) -> str:
    """``vector<2xf64>`` in the words of C: "a vector of 2 double"."""
    names = {16: "_Float16", 32: "float", 64: "double", 80: "long double"}
    elem = names.get(float_width(t.element_type), str(t.element_type))
    return f"a vector of {t.get_shape()[0]} {elem}"


class _Builder:
    """Inserts ops before the call site being rewritten."""

    def __init__(self, call: Operation):
        self.call = call
        self.block = call.parent_block()

    def insert(self, op: Operation) -> Operation:
        op.location = self.call.location
        self.block.insert_op_before(op, self.call)
        return op

    def v(self, op: Operation) -> SSAValue:
        return self.insert(op).results[0]

    def fconst(self, value: float, t: Attribute) -> SSAValue:
        from zymase.ir import FloatAttr

        return self.v(llvm.ConstantOp(FloatAttr(value, t), t))

    def coerce(self, v: SSAValue, t: Attribute, site: _Site, i: int) -> SSAValue:
        """C's default argument promotions in variadic calls (float -> double,
        char/short -> int) undone to the parameter's type."""
        if v.type == t:
            return v
        if is_float_type(v.type) and is_float_type(t):
            wider = float_width(t) > float_width(v.type)
            return self.v(llvm.FPExtOp(v, t) if wider else llvm.FPTruncOp(v, t))
        if isinstance(v.type, IntegerType) and isinstance(t, IntegerType):
            if t.width.data < v.type.width.data:
                return self.v(llvm.TruncOp(v, t))
            return self.v(llvm.SExtOp(v, t))
        raise _err(site, f"argument {i + 1} has type {v.type} but the function expects {t}",
                   "pass a value of the parameter's type (or check the enzyme_* markers)")

    def deliver(self, results: list[SSAValue], sret: SSAValue | None, site: _Site) -> None:
        """Hand the derivative results back in the C return convention of the call."""
        call = self.call
        want = call.returned.type if call.returned is not None else None
        if sret is not None:
            self.insert(llvm.StoreOp(self._pack(results), sret))
            return
        if want is None:
            return
        if not results:
            value = self.v(llvm.ZeroOp(want)) if not is_float_type(want) else self.fconst(0.0, want)
        elif len(results) == 1 and is_float_type(want) and is_float_type(results[0].type):
            r = results[0]
            value = r if r.type == want else self.v(
                llvm.FPExtOp(r, want) if float_width(want) > float_width(r.type) else llvm.FPTruncOp(r, want)
            )
        else:
            packed = self._pack(results)
            if packed.type == want:
                value = packed
            else:
                # Same bytes, other C ABI spelling (e.g. {float, float} returned as
                # <2 x float>): reinterpret through a stack slot.
                one = self.v(llvm.ConstantOp(IntegerAttr(1, i64), i64))
                slot = self.v(llvm.AllocaOp(one, packed.type, alignment=16))
                self.insert(llvm.StoreOp(packed, slot))
                value = self.v(llvm.LoadOp(slot, want))
        call.returned.replace_all_uses_with(value)

    def _pack(self, results: list[SSAValue]) -> SSAValue:
        if len(results) == 1:
            return results[0]
        st = llvm.LLVMStructType.from_type_list([r.type for r in results])
        agg = self.v(llvm.UndefOp(st))
        for i, r in enumerate(results):
            agg = self.v(llvm.InsertValueOp(DenseArrayBase.from_list(i64, [i]), agg, r))
        return agg


def _drop_dead_marker_globals(module: ModuleOp) -> None:
    """Marker loads are dead once their call is gone; an ``extern int enzyme_dup``
    left referenced would not link, so dead references and declarations go."""
    changed = True
    while changed:
        changed = False
        for op in list(module.walk()):
            if isinstance(op, (llvm.LoadOp, llvm.AddressOfOp)) and not any(r.uses for r in op.results):
                if isinstance(op, llvm.LoadOp) and _marker_of(op.results[0]) is None:
                    continue
                if isinstance(op, llvm.AddressOfOp) and _addressof_name(op.results[0]) not in MARKERS:
                    continue
                op.parent_block().erase_op(op)
                changed = True
    used = {
        op.global_name.root_reference.data for op in module.walk() if isinstance(op, llvm.AddressOfOp)
    }
    for op in list(module.body.block.ops):
        if isinstance(op, llvm.GlobalOp) and op.sym_name.data in MARKERS and op.sym_name.data not in used:
            if op.value is None and not op.body.blocks and "zymase.llvm_init" not in op.attributes:
                module.body.block.erase_op(op)
    for op in list(module.body.block.ops):
        if isinstance(op, llvm.FuncOp) and not op.body.blocks:
            n = op.sym_name.data
            if "__enzyme_autodiff" in n or "__enzyme_fwddiff" in n:
                module.body.block.erase_op(op)
