"""Registered custom derivatives: Enzyme's ``__enzyme_register_gradient_<name>``,
``__enzyme_register_derivative_<name>`` and ``__enzyme_register_splitderivative_<name>``
globals (the last for split forward mode only: :func:`split_derivative_functions`,
called by autodiff/forward_split.py).

``void *__enzyme_register_gradient_sq[3] = {f, augment, gradient}`` and
``void *__enzyme_register_derivative_sq[2] = {f, fwd}`` say that wherever ``f`` is
differentiated (asked for by a marker, or called from differentiated code, in a loop or
from a callee zymase inlines), the user's functions are called instead of ``f``'s body
being differentiated. :func:`read_registrations` records them on ``f``
(:data:`CUSTOM_GRADIENT`, :data:`CUSTOM_DERIVATIVE`); the :class:`~zymase.autodiff.driver.Driver`
then builds, instead of a derivative of the body, a small function with zymase's own
derivative signature (combined reverse, split augmented/reverse, forward) that calls
them. Calls of ``f`` are never inlined before AD (``prepare``) nor by the optimizer
before AD (``llvm/pre_ad_marks.protect_annotated_functions``).

The user's functions follow Enzyme's calling convention, checked against their types
(a mismatch is an error naming the function, never a wrong call):

* ``augment(a1, [s1,] a2, [s2,] ...)``: every pointer argument of ``f`` followed by its
  shadow; runs the primal and returns the tape (``f`` returns void) or
  ``{tape, result}``; it may return no tape at all (void / the result alone);
* ``gradient(a1, [s1,] ..., [d_result,] [tape])``: the same arguments, the adjoint of a
  float result, the tape; returns the derivatives of ``f``'s float arguments (one value,
  a struct in argument order, or void) and adds pointer adjoints into the shadows;
* ``fwd(a1, [t1,] ...)``: every float and pointer argument followed by its tangent or
  shadow; returns the tangent of a float result, or ``{result, tangent}``.

In combined reverse mode the augmented call and the gradient run one after the other
where the reverse sweep meets the call; in split mode the augmented call runs in the
forward sweep and its tape is pushed on the global tape for the gradient. Either way
each differentiated call of ``f`` makes one ``augment`` and one ``gradient`` call.
"""

from __future__ import annotations


from zymase.errors import ZymaseError
from zymase.ir import (
    ArrayAttr,
    Attribute,
    DenseArrayBase,
    ModuleOp,
    Operation,
    SSAValue,
    StringAttr,
    i64,
    is_float_type,
    llvm,
    location_of,
)
from zymase.ir import enzyme as ez

CUSTOM_GRADIENT = "zymase.custom_gradient"  # [augment, gradient] on the registered function
CUSTOM_DERIVATIVE = "zymase.custom_derivative"  # fwd on the registered function
CUSTOM_SPLIT = "zymase.custom_splitderivative"  # [augment, fwdsplit] on the registered function

_GRADIENT_PREFIX = "__enzyme_register_gradient"
_DERIVATIVE_PREFIX = "__enzyme_register_derivative"
_SPLIT_PREFIX = "__enzyme_register_splitderivative"


# ------------------------------------------------------------------ registrations


def _registration_fields(glob: Operation) -> list[str | None]:
    from zymase.analysis.layout import size_align
    from zymase.transforms.known_callees import function_fields

    fields = function_fields(glob)
    t = glob.global_type
    count = t.size.data if isinstance(t, llvm.LLVMArrayType) else len(fields)
    step = size_align(llvm.LLVMPointerType())[0]
    return [fields.get(i * step) for i in range(count)]


def read_registrations(module: ModuleOp) -> int:
    """Record every registration global on the function it registers; returns how many."""
    functions = {op.sym_name.data: op for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
    count = 0
    for glob in module.body.block.ops:
        if not isinstance(glob, llvm.GlobalOp):
            continue
        name = glob.sym_name.data
        if _GRADIENT_PREFIX in name:
            key, want, roles = CUSTOM_GRADIENT, 3, ("the function", "the augmented forward pass", "the gradient")
        elif _DERIVATIVE_PREFIX in name:
            key, want, roles = CUSTOM_DERIVATIVE, 2, ("the function", "the forward-mode derivative")
        elif _SPLIT_PREFIX in name:
            key, want, roles = CUSTOM_SPLIT, 3, ("the function", "the augmented forward pass",
                                                 "the split forward derivative")
        else:
            continue
        fields = _registration_fields(glob)
        if len(fields) != want or any(f is None or f not in functions for f in fields):
            raise ZymaseError(
                f"registration '{name}' must be an array of {want} function addresses: "
                + ", ".join(roles) + f"; got {len(fields)} entries"
                + ("" if all(f in functions for f in fields if f) else ", not all of them functions of this file"),
                construct=name, location=location_of(glob),
                hint="write it as void *" + name + "[" + str(want) + "] = {(void*)f, "
                + ("(void*)fwd}" if want == 2 else "(void*)augment, (void*)fwdsplit}" if key == CUSTOM_SPLIT
                   else "(void*)augment, (void*)gradient}"))
        fop = functions[fields[0]]
        if key in fop.attributes:
            raise ZymaseError(f"'{fields[0]}' has two registered {'gradients' if key == CUSTOM_GRADIENT else 'derivatives'}",
                              construct=name, function=fields[0], hint="register one per function")
        value = ArrayAttr([StringAttr(f) for f in fields[1:]])
        fop.attributes[key] = value
        count += 1
    return count


def custom_gradient(fop: Operation) -> tuple[str, str] | None:
    value = fop.attributes.get(CUSTOM_GRADIENT)
    return (value.data[0].data, value.data[1].data) if isinstance(value, ArrayAttr) else None


def custom_derivative(fop: Operation) -> str | None:
    value = fop.attributes.get(CUSTOM_DERIVATIVE)
    return value.data[0].data if isinstance(value, ArrayAttr) else None


def custom_splitderivative(fop: Operation) -> tuple[str, str] | None:
    value = fop.attributes.get(CUSTOM_SPLIT)
    return (value.data[0].data, value.data[1].data) if isinstance(value, ArrayAttr) else None


def has_custom_rule(fop: Operation) -> bool:
    return any(key in fop.attributes for key in (CUSTOM_GRADIENT, CUSTOM_DERIVATIVE, CUSTOM_SPLIT))


def split_derivative_functions(module: ModuleOp, fop: Operation) -> tuple[str, Attribute | None, str]:
    """The user's ``augment`` and ``fwdsplit`` of a split derivative registered for
    ``fop`` (``__enzyme_register_splitderivative_<f> = {f, augment, fwdsplit}``), checked
    against Enzyme's convention, and the type of the tape between them (None: no tape).

    * ``augment(a1, a2, ...)`` runs the primal and returns the tape (``f`` returns void),
      ``{tape, result}``, or the result alone (no tape);
    * ``fwdsplit(a1, [t1,] a2, [t2,] ..., [tape])``: each float argument followed by its
      tangent, then the tape; returns the tangent of a float result (or void).

    Pointer arguments are refused: the augmented primal of split forward mode computes no
    shadows to pass to ``augment``."""
    try:
        return _split_derivative_functions(module, fop)
    except ZymaseError as e:
        if e.hint and e.hint.startswith("augment(args with a shadow"):
            e.hint = ("augment(args) returns the tape, {tape, result} or the result; fwdsplit(args with a "
                      "tangent after each float, [tape]) returns the result's tangent")
        raise


def _split_derivative_functions(module: ModuleOp, fop: Operation) -> tuple[str, Attribute | None, str]:
    fname = fop.sym_name.data
    augment, fsd = custom_splitderivative(fop)
    params, result, _ = _signature(module, fname)
    if any(_is_ptr(t) for t in params) or (result is not None and _is_ptr(result)):
        raise ZymaseError(
            f"'{fname}' has a registered split derivative and takes or returns a pointer: zymase supports "
            "registered split derivatives of functions of scalars only", construct=_SPLIT_PREFIX + "_" + fname,
            function=fname, hint="pass the values themselves, or differentiate the caller with __enzyme_fwddiff")
    inputs, out, _ = _signature(module, augment)
    if inputs != params:
        raise _mismatch(fname, augment, "the augmented forward pass", f"{len(params)} parameters, those of "
                        f"'{fname}'", f"takes {len(inputs)}" if len(inputs) != len(params) else "takes other types")
    tape_type = None
    if result is not None:
        if isinstance(out, llvm.LLVMStructType) and len(out.types.data) == 2 and out.types.data[1] == result:
            tape_type = out.types.data[0]
        elif out != result:
            raise _mismatch(fname, augment, "the augmented forward pass",
                            "a {tape, result} struct (or the result alone) returned", f"returns {_c_type(out)}")
    else:
        tape_type = out
    inputs, out, _ = _signature(module, fsd)
    want = len(params) + sum(1 for t in params if is_float_type(t)) + (tape_type is not None)
    if len(inputs) != want or (tape_type is not None and inputs[-1] != tape_type):
        raise _mismatch(fname, fsd, "the split forward derivative",
                        f"{want} parameters (a tangent after each float argument"
                        + (f", then the tape, {_c_type(tape_type)}" if tape_type is not None else "") + ")",
                        f"takes {len(inputs)}")
    expect = result if result is not None and is_float_type(result) else None
    if out != expect:
        raise _mismatch(fname, fsd, "the split forward derivative", f"the result's tangent ({_c_type(expect)}) "
                        "returned", f"returns {_c_type(out)}")
    return augment, tape_type, fsd


# ------------------------------------------------------------------ signatures


def _signature(module: ModuleOp, name: str) -> tuple[list[Attribute], Attribute | None, Operation]:
    fop = next(op for op in module.body.block.ops if isinstance(op, llvm.FuncOp) and op.sym_name.data == name)
    ftype = fop.function_type
    out = ftype.output
    return list(ftype.inputs.data), (None if isinstance(out, llvm.LLVMVoidType) else out), fop


def _c_type(t: Attribute | None) -> str:
    from zymase.llvm.marker_calls import c_spelling

    return "void" if t is None else c_spelling(t)


def _is_ptr(t: Attribute) -> bool:
    return isinstance(t, llvm.LLVMPointerType)


def _mismatch(fname: str, user: str, role: str, expected: str, got: str) -> ZymaseError:
    return ZymaseError(
        f"'{user}', registered as {role} of '{fname}', {got}, but Enzyme's convention needs {expected}",
        construct=user, function=fname,
        hint="augment(args with a shadow after each pointer) returns the tape or {tape, result}; "
        "gradient(same args, [d_result,] tape) returns the float arguments' derivatives; "
        "fwd(args with a tangent after each float and pointer) returns the result's tangent")


def _split_struct(E, value: SSAValue, types: list[Attribute]) -> list[SSAValue]:
    return [E.v(llvm.ExtractValueOp(DenseArrayBase.from_list(i64, [k]), value, t)) for k, t in enumerate(types)]


def _user_args(fname: str, user: str, role: str, params, acts, args_iter, E, *, forward: bool) -> list[SSAValue]:
    """The user's argument list from the wrapper's: each pointer (and, for ``fwd``,
    each float) followed by its shadow or tangent; a float without tangent gets 0."""
    out = []
    for i, (t, act) in enumerate(zip(params, acts)):
        out.append(next(args_iter))
        needs = _is_ptr(t) or (forward and is_float_type(t))
        if not needs:
            continue
        if act.is_dup:
            out.append(next(args_iter))
        elif is_float_type(t):
            out.append(E.zero(t))
        else:
            raise ZymaseError(
                f"argument {i + 1} of '{fname}' is a pointer without a shadow here, but its registered "
                f"{role} '{user}' takes one", construct=user, function=fname,
                hint="pass the pointer's shadow (enzyme_dup) where the derivative is asked for, or make "
                "the memory it points to active")
    return out


class CustomRules:
    """Builds the functions the Driver asks for when ``fop`` has a registered rule."""

    def __init__(self, module: ModuleOp, flavor, fop: Operation):
        from zymase.autodiff.flavor import Emitter

        self.module = module
        self.flavor = flavor
        self.fop = fop
        self.fname = fop.sym_name.data
        self.params, self.result, _ = _signature(module, self.fname)
        self._emitter = lambda block: Emitter(flavor, module).at_end(block)

    # -- the user's functions, checked
    def _augment(self):
        aug, _ = custom_gradient(self.fop)
        inputs, out, _ = _signature(self.module, aug)
        want = len(self.params) + sum(map(_is_ptr, self.params))
        if len(inputs) != want:
            raise _mismatch(self.fname, aug, "the augmented forward pass", f"{want} parameters",
                            f"takes {len(inputs)}")
        tape_type, has_result = None, self.result is not None
        if has_result:
            if isinstance(out, llvm.LLVMStructType) and len(out.types.data) == 2 and out.types.data[1] == self.result:
                tape_type = out.types.data[0]
            elif out != self.result:
                raise _mismatch(self.fname, aug, "the augmented forward pass",
                                "a {tape, result} struct (or the result alone) returned", f"returns {_c_type(out)}")
        else:
            tape_type = out
        return aug, tape_type

    def _gradient(self, tape_type):
        _, grad = custom_gradient(self.fop)
        inputs, out, _ = _signature(self.module, grad)
        floats = [t for t in self.params if is_float_type(t)]
        seed = self.result is not None and is_float_type(self.result)
        want = len(self.params) + sum(map(_is_ptr, self.params)) + seed + (tape_type is not None)
        if len(inputs) != want:
            raise _mismatch(self.fname, grad, "the gradient", f"{want} parameters (the arguments with shadows"
                            + (", the result's adjoint" if seed else "") + (", the tape" if tape_type else "")
                            + ")", f"takes {len(inputs)}")
        if not floats:
            expect = None
        elif len(floats) == 1:
            expect = floats[0]
        else:
            expect = llvm.LLVMStructType.from_type_list(floats)
        if out != expect:
            raise _mismatch(self.fname, grad, "the gradient",
                            f"the derivatives of the float arguments returned ({_c_type(expect)})",
                            f"returns {_c_type(out)}")
        return grad, floats

    # -- combined reverse mode
    def reverse(self, gop: Operation, arg_acts, ret_acts) -> None:
        aug, tape_type = self._augment()
        grad, floats = self._gradient(tape_type)
        E = self._emitter(gop.body.blocks[0])
        it = iter(gop.body.blocks[0].args)
        user = _user_args(self.fname, aug, "augmented forward pass", self.params, arg_acts, it, E, forward=False)
        seeds = [next(it) for a in ret_acts if a.is_active]
        primal, tape = self._call_augment(E, aug, user, tape_type)
        derivs = self._call_gradient(E, grad, user, seeds, tape, floats)
        outs = []
        if ret_acts and ret_acts[0].needs_primal:
            outs.append(primal)
        for t, a in zip(self.params, arg_acts):
            if a.is_active:
                outs.append(derivs.pop(0) if is_float_type(t) else E.zero(t))
            elif is_float_type(t):
                derivs.pop(0)
        self.flavor.ret(E, outs, None)

    # -- split mode: the tape crosses on the global tape
    def split(self, aug_op: Operation, rev_op: Operation, arg_acts, ret_acts) -> None:
        aug, tape_type = self._augment()
        grad, floats = self._gradient(tape_type)
        E = self._emitter(aug_op.body.blocks[0])
        user = _user_args(self.fname, aug, "augmented forward pass", self.params, arg_acts,
                          iter(aug_op.body.blocks[0].args), E, forward=False)
        primal, tape = self._call_augment(E, aug, user, tape_type)
        if tape is not None:
            E.insert(ez.PushOp(self._global_tape(E, tape_type), tape))
        self.flavor.ret(E, [primal] if self.result is not None else [], None)

        E = self._emitter(rev_op.body.blocks[0])
        it = iter(rev_op.body.blocks[0].args)
        user = _user_args(self.fname, grad, "gradient", self.params, arg_acts, it, E, forward=False)
        seeds = [next(it) for a in ret_acts if a.is_active]
        tape = E.v(ez.PopOp(self._global_tape(E, tape_type))) if tape_type is not None else None
        derivs = self._call_gradient(E, grad, user, seeds, tape, floats)
        outs = []
        for t, a in zip(self.params, arg_acts):
            if a.is_active:
                outs.append(derivs.pop(0))
            elif is_float_type(t):
                derivs.pop(0)
        self.flavor.ret(E, outs, None)

    def _global_tape(self, E, tape_type) -> SSAValue:
        init = ez.InitOp(ez.CacheType(tape_type))
        init.attributes["zymase.tape"] = StringAttr("global")
        return E.v(init)

    def _call_augment(self, E, aug, user, tape_type):
        out_types = ([tape_type] if tape_type is not None else []) + (
            [self.result] if self.result is not None else [])
        results = self.flavor.call(E, aug, user, out_types)
        tape = results[0] if tape_type is not None else None
        primal = results[-1] if self.result is not None else None
        return primal, tape

    def _call_gradient(self, E, grad, user, seeds, tape, floats) -> list[SSAValue]:
        args = list(user)
        if self.result is not None and is_float_type(self.result):
            args.append(seeds[0] if seeds else E.zero(self.result))
        if tape is not None:
            args.append(tape)
        return list(self.flavor.call(E, grad, args, floats))

    # -- forward mode
    def forward(self, gop: Operation, arg_acts, ret_acts, writes_memory: bool) -> None:
        fwd = custom_derivative(self.fop)
        inputs, out, _ = _signature(self.module, fwd)
        want = len(self.params) + sum(1 for t in self.params if _is_ptr(t) or is_float_type(t))
        if len(inputs) != want:
            raise _mismatch(self.fname, fwd, "the forward-mode derivative",
                            f"{want} parameters (a tangent or shadow after each float and pointer)",
                            f"takes {len(inputs)}")
        r = self.result
        pair = r is not None and isinstance(out, llvm.LLVMStructType) and list(out.types.data) == [r, r]
        if r is None and out is not None or r is not None and not pair and out != r:
            raise _mismatch(self.fname, fwd, "the forward-mode derivative",
                            "the result's tangent (or {result, tangent}) returned" if r is not None
                            else "void returned", f"returns {_c_type(out)}")
        E = self._emitter(gop.body.blocks[0])
        block_args = list(gop.body.blocks[0].args)
        user = _user_args(self.fname, fwd, "forward-mode derivative", self.params, arg_acts, iter(block_args), E,
                          forward=True)
        outs: list[SSAValue] = []
        if r is None:
            self.flavor.call(E, fwd, user, [])
        else:
            want_primal = bool(ret_acts) and ret_acts[0].needs_primal
            want_tangent = bool(ret_acts) and ret_acts[0].is_dup
            if pair:
                primal, tangent = self.flavor.call(E, fwd, user, [r, r])
            else:
                primal = None
                if want_primal:
                    if writes_memory:
                        raise _mismatch(self.fname, fwd, "the forward-mode derivative",
                                        "{result, tangent} returned (the result is used, and calling "
                                        f"'{self.fname}' again would repeat its writes)", f"returns {_c_type(out)}")
                    primals = [a for a, t, act in _primal_args(block_args, self.params, arg_acts)]
                    primal = self.flavor.call(E, self.fname, primals, [r])[0]
                (tangent,) = self.flavor.call(E, fwd, user, [r])
            if want_primal:
                outs.append(primal)
            if want_tangent:
                outs.append(tangent)
        self.flavor.ret(E, outs, None)


def _primal_args(block_args, params, acts):
    it = iter(block_args)
    for t, act in zip(params, acts):
        a = next(it)
        if act.is_dup:
            next(it)
        yield a, t, act
