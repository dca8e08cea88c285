"""Forward and reverse mode of StableHLO functions (tensor programs lowered by JAX).

A StableHLO ``@main`` is one block of tensor ops (control flow lives in region ops),
run by XLA as one program: every primal value stays available until the program
ends, so the reverse sweep reads primal values directly, with no tape. The
derivative is built in place of ``@main``:

* reverse: ``@main(args..., seeds...) -> (results..., adjoints of the active args)``,
  one seed per float result; the adjoint code follows the primal code in the same block;
* forward: ``@main(args..., tangents of the active args) -> (results..., tangents of the
  float results)``.

The engine parts are the shared ones: activity analysis (``analysis/activity``), the
rule registry (rules in ``rules/stablehlo.py``, elementwise ones from
``rules/scalar.py``), the emitter with the StableHLO flavor (``hlo_flavor.py``) and
the float-tensor type rule. JAX's private helper functions (``@_where``, ``@clip``)
are inlined first.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager

from zymase.analysis.activity import ActivityInfo, analyze
from zymase.autodiff import hlo_flavor
from zymase.autodiff.flavor import Emitter
from zymase.autodiff.registry import REGISTRY
from zymase.errors import ZymaseError
from zymase.ir import Attribute, FunctionType, ModuleOp, Operation, SSAValue, func, location_of
from zymase.ir import stablehlo as hlo
from zymase.ir.enzyme import Activity


def _load_rules() -> None:
    from zymase.autodiff.rules import stablehlo as _rules  # noqa: F401  (each registers itself)
    from zymase.autodiff.rules import stablehlo_scatter as _scatter  # noqa: F401
    from zymase.autodiff.rules import stablehlo_control as _control  # noqa: F401
    from zymase.autodiff.rules import stablehlo_sort as _sort  # noqa: F401
    from zymase.autodiff.rules import stablehlo_window as _window  # noqa: F401
    from zymase.autodiff.rules import stablehlo_conv as _conv  # noqa: F401


class _Context:
    """The rule context of a StableHLO derivative: primal values are read where they
    are (one XLA program keeps them all); JAX's derivatives have no strong zeros, and
    neither do these."""

    def __init__(self, E: Emitter, info: ActivityInfo, function: str, primal_ops: set | None = None):
        self.E = E
        self.info = info
        self.function = function  # the Python function, for refusals in region rules
        # the user's own ops (None inside region rules' copies): a rule that replaces one
        # (a counted loop by the loop that also stores its residuals) adds the new ops
        self.primal_ops = primal_ops

    def primal(self, value: SSAValue) -> SSAValue:
        return value

    def varies_in_loop(self, value: SSAValue) -> bool:
        return False

    def wants(self, value: SSAValue) -> bool:
        return self.info.is_active(value)

    def may_be_nonfinite(self, value: SSAValue) -> bool:
        return False

    def singular_here(self, op: Operation, rule) -> bool:
        return False


def _propagates(op: Operation, index: int) -> bool:
    rule = REGISTRY.lookup(op)
    if rule is not None:
        return rule.propagates(op, index)
    # no rule: assume the derivative flows, so the op is refused if it is active
    return hlo.is_float_tensor(op.operands[index].type)


def _rule(op: Operation, function: str):
    rule = REGISTRY.lookup(op)
    if rule is None:
        raise ZymaseError(f"no derivative rule for '{op.name}'", construct=op.name, function=function,
                          location=location_of(op),
                          hint="differentiate around this operation (jax.lax.stop_gradient), or write it "
                               "with operations zymase differentiates")
    return rule


def main_function(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == "main":
            return op
    raise ZymaseError("the StableHLO module has no @main function", construct="builtin.module",
                      hint="pass the module jax.jit(f).lower(...) produces")


def inline_calls(module: ModuleOp, function: str) -> func.FuncOp:
    """Inline every ``func.call`` in ``@main`` (transitively) and in the functions of the
    custom rules its markers call (``hlo.is_custom_rule``; transitively: a rule's function
    may hold the marker of a linear solve), keep those and drop the other functions;
    returns ``@main``."""
    table = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    main = main_function(module)
    kept, work = {main}, [main]
    while work:
        fop = work.pop()
        _inline_into(fop, table, function)
        for name in marker_functions(fop):
            if table[name] not in kept:
                kept.add(table[name])
                work.append(table[name])
    for op in list(module.ops):
        if op not in kept:
            op.detach()
    return main


def marker_functions(fop: Operation) -> list[str]:
    """The functions the custom-rule markers in ``fop`` call (not those of markers inside
    them)."""
    return list(dict.fromkeys(name for op in fop.walk() if hlo.is_custom_rule(op)
                              for name in hlo.called_computations(op)))


def _inline_into(fop: func.FuncOp, table: dict, function: str) -> None:
    depth = 0
    while True:
        calls = [op for op in fop.walk() if isinstance(op, func.CallOp)]
        if not calls:
            break
        depth += 1
        if depth > 64:
            raise ZymaseError("recursive function calls in the StableHLO module", construct="func.call",
                              function=function, hint="JAX does not emit recursion; pass a lowered JAX function")
        for call in calls:
            callee = table[call.callee.root_reference.data]
            body = callee.body.clone()
            block = body.blocks[0]
            for arg, value in zip(block.args, call.arguments):
                arg.replace_all_uses_with(value)
            ret = block.last_op
            results = list(ret.operands)
            for op in list(block.ops):
                if op is ret:
                    break
                for inner in op.walk():  # a helper's ops are at the user's call
                    if location_of(inner) is None:
                        inner.location = call.location
                op.detach()
                call.parent_block().insert_op_before(op, call)
            for old, new in zip(call.results, results):
                old.replace_all_uses_with(new)
            call.detach()
            call.erase()
            ret.detach()  # the copy's return would stay a use of the values it returned
            ret.erase()


def _float_results(ret: Operation) -> list[int]:
    return [i for i, v in enumerate(ret.operands) if hlo.is_float_tensor(v.type)]


def _refuse_nested_activity(block_ops, info: ActivityInfo, function: str) -> None:
    """Region ops without a rule (sort, reduce_window, ...) are refused when active."""
    for op in block_ops:
        if op.regions and info.op_is_active(op) and REGISTRY.lookup(op) is None:
            _rule(op, function)


def captured_values(op: Operation) -> list[SSAValue]:
    """The values ``op``'s regions read from outside ``op``, in the order of first use."""
    inside: set[SSAValue] = set()
    used: list[SSAValue] = []
    for region in op.regions:
        for block in region.blocks:
            inside.update(block.args)
        for inner in region.walk():
            inside.update(inner.results)
            for r in inner.regions:
                for b in r.blocks:
                    inside.update(b.args)
            used += inner.operands
    return list(dict.fromkeys(v for v in used if v not in inside))


def refuse_active_captures(ops: Sequence[Operation], varied: set[SSAValue], function: str) -> None:
    """Activity analysis follows operands, not the values a region reads from outside
    (JAX passes everything through operands, but for ``stablehlo.case``, whose branches
    are analysed with the body, ``branch_blocks``): such a value that varies would get
    no derivative, so it is refused."""
    for op in ops:
        if isinstance(op, hlo.CaseOp):
            continue
        if op.regions and any(v in varied for v in captured_values(op)):
            _rule(op, function)  # no rule at all (stablehlo.case): say that first
            raise ZymaseError(f"'{op.name}' reads an active value from outside its regions", construct=op.name,
                              function=function, location=location_of(op),
                              hint="pass the value as an operand (through the loop state, as lax.while_loop does)")


def block_activity(block, active_args: Sequence[bool]) -> ActivityInfo:
    """Activity of a block's values: the arguments marked active, every returned
    value wanted (a function body, or the body of a loop)."""
    acts = [Activity.ACTIVE if a else Activity.CONST for a in active_args]
    returned = [(v, Activity.ACTIVE) for v in block.last_op.operands]
    blocks = [block, *branch_blocks(block)]
    info = analyze(blocks, acts, returned, _propagates, hlo_flavor.HLO)
    _refuse_underived_from_active(blocks, info)
    return info


def _underived_number_type(t: Attribute) -> str | None:
    """The name of a tensor's element type when it is a number type that carries no
    derivative (complex, and the floats other than bf16/f16/f32/f64: float8 and
    smaller, tf32), else None. Activity does not flow into such values, so a
    derivative reaching one was lost without a word."""
    from xdsl.dialects.builtin import _FloatType

    from zymase.ir import ComplexType

    element = getattr(t, "element_type", None)
    if isinstance(element, ComplexType):
        return "complex"
    if isinstance(element, _FloatType) and not hlo.is_float_tensor(t):
        return str(element)
    return None


def _refuse_active_underived_arguments(block, active_args: Sequence[bool], function: str) -> None:
    for i, (arg, active) in enumerate(zip(block.args, active_args)):
        kind = _underived_number_type(arg.type) if active else None
        if kind is not None:
            raise ZymaseError(
                f"argument {i} is a {kind} array, whose derivative zymase does not compute",
                construct=f"argument of type {kind}", function=function,
                hint="differentiate with respect to bf16, float16, float32 or float64 arrays "
                     "(convert inside the function), or differentiate this function with jax.grad")


def _refuse_underived_from_active(blocks, info: ActivityInfo) -> None:
    """Complex tensors, and floats narrower than bf16/f16, carry no derivative (their
    type is not differentiable), so an active float turned into one (``x + 1j * y``,
    ``jnp.exp(1j * x)``, ``x.astype(jnp.float8_e4m3fn)``) lost its derivative there:
    the gradient was zero without a word."""
    for b in blocks:
        for op in b.ops:
            kinds = [k for k in map(_underived_number_type, (r.type for r in op.results)) if k]
            if kinds and any(o in info.varied for o in op.operands):
                if kinds[0] == "complex":
                    what, hint = "complex numbers are not differentiated", (
                        "compute with the real and imaginary parts as separate float arrays, "
                        "or differentiate this function with jax.grad")
                else:
                    what, hint = f"{kinds[0]} floats are not differentiated", (
                        "compute in bf16, float16, float32 or float64, or differentiate this function with jax.grad")
                raise ZymaseError(
                    f"{what}: this {op.name} makes a {kinds[0]} value from an active one",
                    construct=op.name, location=location_of(op), hint=hint)


def branch_blocks(block) -> list:
    """The blocks of the ``stablehlo.case`` ops in ``block`` (nested ones too): their
    branches read the values around them directly, so they are analysed as part of
    the body (analysis/scf.value_flow links their returns to the case results)."""
    out = []
    for op in block.ops:
        if isinstance(op, hlo.CaseOp):
            for region in op.regions:
                out.append(region.blocks[0])
                out += branch_blocks(region.blocks[0])
    return out


@contextmanager
def _refusals_at(op: Operation, function: str):
    """A rule's refusal names the Python function and the op's source line."""
    try:
        yield
    except ZymaseError as exc:
        exc.function = exc.function or function
        exc.location = exc.location or location_of(op)
        raise


def reverse_sweep(E: Emitter, ops: Sequence[Operation], info, seeds: dict[SSAValue, SSAValue],
                  function: str, primal_ops: set | None = None) -> dict[SSAValue, SSAValue]:
    """Emit (at ``E``) the adjoint code of ``ops`` in reverse order, from the adjoints
    ``seeds`` of some of their values; returns every adjoint, those of the values the
    ops read from outside (block arguments) included. Primal values are read where
    they are, so ``E`` must be dominated by the ops. ``primal_ops`` (the user's ops, in
    ``reverse``) grows by the ops of rules that replace a primal op."""
    ctx = _Context(E, info, function, primal_ops)
    adjoint: dict[SSAValue, SSAValue] = {}

    def accumulate(v: SSAValue, d: SSAValue) -> None:
        adjoint[v] = E.add(adjoint[v], d) if v in adjoint else d

    for v, seed in seeds.items():
        if info.is_active(v):
            accumulate(v, seed)
    for op in reversed(ops):
        if not info.op_is_active(op):
            continue
        dys = [adjoint.get(r) for r in op.results]
        if all(d is None for d in dys):
            continue
        rule = _rule(op, function)
        with _refusals_at(op, function):
            contributions = rule.reverse(ctx, op, dys)
        for operand, d in zip(op.operands, contributions):
            if d is not None and info.is_active(operand):
                accumulate(operand, d)
        # a rule for branches that read values around them (stablehlo.case) gives
        # those values' adjoints too
        for v, d in getattr(rule, "captured_adjoints", lambda *a: {})(ctx, op, dys).items():
            if info.is_active(v):
                accumulate(v, d)
    return adjoint


def forward_sweep(E: Emitter, ops: Sequence[Operation], info, tangents: dict[SSAValue, SSAValue],
                  function: str) -> dict[SSAValue, SSAValue]:
    """Emit (at ``E``) the tangent code of ``ops`` in order, from the tangents of the
    values they read (``tangents``, updated in place and returned)."""
    ctx = _Context(E, info, function)
    for op in ops:
        if not info.op_is_active(op):
            continue
        ins = [tangents.get(v) for v in op.operands]
        rule = _rule(op, function)
        if not hasattr(rule, "forward_captured") and all(t is None for t in ins):
            continue
        with _refusals_at(op, function):
            if hasattr(rule, "forward_captured"):  # stablehlo.case: its branches read tangents around them
                outs = rule.forward_captured(ctx, op, ins, tangents)
            else:
                outs = rule.forward(ctx, op, ins)
        for r, t in zip(op.results, outs):
            if t is not None:
                tangents[r] = t
    return tangents


def _main_for_ad(module: ModuleOp, active: Sequence[bool], function: str):
    """``@main`` with its calls inlined, checked for what neither mode handles; returns
    it, its primal ops, its block, return, activity and the ops before the return."""
    _load_rules()
    main = inline_calls(module, function)
    primal = frozenset(main.walk())
    block = main.body.blocks[0]
    ret = block.last_op
    _refuse_active_underived_arguments(block, active, function)
    with _refusals_at(ret, function):
        info = block_activity(block, active)
    ops = [op for op in block.ops if op is not ret]
    _refuse_nested_activity(ops, info, function)
    refuse_active_captures(ops, info.varied, function)
    return main, primal, block, ret, info, ops


def reverse(module: ModuleOp, active: Sequence[bool], function: str) -> frozenset[Operation]:
    """Turn ``module``'s ``@main`` into its reverse-mode derivative (see module doc);
    returns the primal ops (what the user's program computes, not derivative code)."""
    main, primal, block, ret, info, ops = _main_for_ad(module, active, function)
    primal = set(primal)

    E = Emitter(hlo_flavor.HLO, module).before(ret)
    seeds: dict[SSAValue, SSAValue] = {}
    for i in _float_results(ret):
        seed = block.insert_arg(ret.operands[i].type, len(block.args))
        v = ret.operands[i]
        seeds[v] = E.add(seeds[v], seed) if v in seeds else seed  # one value returned twice
    adjoint = reverse_sweep(E, ops, info, seeds, function, primal)
    grads = []
    for arg, is_active in zip(list(block.args)[:len(active)], active):
        if is_active:
            grads.append(adjoint[arg] if arg in adjoint else E.zero(arg.type))
    _set_return(main, ret, list(ret.operands) + grads)
    primal |= strip_custom_rules(module, main)  # first: a primal's copy may hold stop_gradient marks
    strip_stop_gradients(main)
    return frozenset(primal)


def forward(module: ModuleOp, active: Sequence[bool], function: str) -> frozenset[Operation]:
    """Turn ``module``'s ``@main`` into its forward-mode derivative (see module doc);
    returns the primal ops."""
    main, primal, block, ret, info, ops = _main_for_ad(module, active, function)

    E = Emitter(hlo_flavor.HLO, module).before(ret)
    tangent: dict[SSAValue, SSAValue] = {}
    for arg, is_active in zip(list(block.args), active):
        if is_active:
            t = block.insert_arg(arg.type, len(block.args))
            if info.is_active(arg):
                tangent[arg] = t
    forward_sweep(E, ops, info, tangent, function)
    outs = [tangent.get(ret.operands[i]) or E.zero(ret.operands[i].type) for i in _float_results(ret)]
    _set_return(main, ret, list(ret.operands) + outs)
    primal = primal | strip_custom_rules(module, main)  # first: a primal's copy may hold stop_gradient marks
    strip_stop_gradients(main)
    return primal


def strip_stop_gradients(main: func.FuncOp) -> None:
    """Replace zymase's stop_gradient markers (frontends/jax.py) by their operands: the
    derivative has treated them as constants, and XLA knows no such custom_call."""
    for op in list(main.walk()):
        if hlo.is_stop_gradient(op):
            op.results[0].replace_all_uses_with(op.operands[0])
            op.detach()
            op.erase()


def strip_custom_rules(module: ModuleOp, main: func.FuncOp) -> frozenset[Operation]:
    """Replace the markers of users' custom rules (``frontends/jax_custom_rules``) that
    remain (what is not differentiated, and the primal of what is) by a copy of their
    primal function, and drop the rules' functions; returns the copied ops."""
    from zymase.autodiff.rules.stablehlo_regions import inline

    copied: list[Operation] = []
    table = {op.sym_name.data: op for op in module.ops if isinstance(op, func.FuncOp)}
    # a primal's copy may hold markers (of linear solves): until none is left
    while markers := [op for op in main.walk() if hlo.is_custom_rule(op)]:
        for op in markers:
            primal = table[hlo.called_computations(op)[0]]
            outs, ops, _ = inline(Emitter(hlo_flavor.HLO, module).before(op), primal.body, list(op.operands))
            for inner in ops:
                for nested in inner.walk():
                    nested.location = op.location  # refusals and profiles name the user's call
                    copied.append(nested)
            for old, new in zip(op.results, outs):
                old.replace_all_uses_with(new)
            op.detach()
            op.erase()
    for op in list(module.ops):
        if op is not main:
            op.detach()
    return frozenset(copied)


def _set_return(main: func.FuncOp, ret: Operation, values: list[SSAValue]) -> None:
    block = main.body.blocks[0]
    new = func.ReturnOp(*values)
    block.insert_op_before(new, ret)
    ret.detach()
    ret.erase()
    main.function_type = FunctionType.from_lists([a.type for a in block.args], [v.type for v in values])
    main.properties.pop("res_attrs", None)
    main.properties.pop("arg_attrs", None)

