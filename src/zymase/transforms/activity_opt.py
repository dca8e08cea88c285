"""``enzyme-activity-opt``: make ``enzyme.autodiff`` / ``enzyme.fwddiff`` ask for less.

From how a differentiation request's results are used and what its seeds are, the
activities are promoted to cheaper ones and the operands and results that are no
longer needed are dropped (Enzyme-MLIR's activity canonicalizations):

reverse mode (``enzyme.autodiff``)
  * a result whose primal value is unused: active -> activenoneed, dup -> dupnoneed,
    const -> constnoneed;
  * an active argument whose derivative is unused: -> const;
  * a result whose seed is a constant zero: -> const / constnoneed (seed dropped);
  * a result whose seed reaches no used derivative (by the callee's dependence of
    results on arguments): -> const / constnoneed (seed dropped);
  * an active argument whose derivative no active result can reach: the derivative
    is zero, its uses get a constant 0 and the argument becomes const.

forward mode (``enzyme.fwddiff``)
  * a result whose primal value is unused: the *noneed variant;
  * a result whose tangent is unused: -> const / constnoneed;
  * a scalar argument whose tangent is a constant zero: -> const;
  * a scalar argument whose tangent reaches no tangent result: -> const;
  * a result whose tangent depends on no differentiated argument: its uses get a
    constant 0 and it becomes const.

The dependence of results on arguments comes from activity analysis of the callee
(one analysis per argument). When the callee touches memory (memref or pointer
arguments, allocations), derivatives may also travel through shadow memory, so
every result is taken to depend on every argument and shadows are never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from zymase.ir import (
    FloatAttr,
    IndexType,
    IntegerType,
    ModuleOp,
    Operation,
    SSAValue,
    arith,
    is_float_type,
    llvm,
)
from zymase.ir import enzyme as ez
from zymase.ir.enzyme import Activity

A = Activity

_NONEED = {A.ACTIVE: A.ACTIVENONEED, A.DUP: A.DUPNONEED, A.CONST: A.CONSTNONEED}
_CONST = {A.ACTIVE: A.CONST, A.DUP: A.CONST, A.ACTIVENONEED: A.CONSTNONEED, A.DUPNONEED: A.CONSTNONEED}


def _noneed(a: Activity) -> Activity:
    return _NONEED.get(a, a)


def _const(a: Activity) -> Activity:
    return _CONST.get(a, a)


@dataclass
class _Arg:
    primal: SSAValue
    derivative_in: SSAValue | None  # the shadow (dup) or tangent (forward)
    activity: Activity
    derivative_out: SSAValue | None = None  # reverse: the gradient result


@dataclass
class _Ret:
    activity: Activity
    primal: SSAValue | None = None  # the primal result, when returned
    seed: SSAValue | None = None  # reverse: the seed operand
    tangent: SSAValue | None = None  # forward: the tangent result


def run_activity_opt(module: ModuleOp) -> ModuleOp:
    """Canonicalize the activities of every differentiation request in ``module``."""
    from zymase.autodiff.driver import Driver

    driver = Driver(module)
    # vector-mode requests (width > 1) are left as written: _Request decodes one
    # derivative operand and result per argument and result
    for op in [o for o in module.walk() if isinstance(o, (ez.AutoDiffOp, ez.FwdDiffOp)) and o.lanes == 1]:
        _Request(op, driver, module).optimize()
    return module


class _Request:
    """One ``enzyme.autodiff``/``enzyme.fwddiff`` op, decoded per argument/result."""

    def __init__(self, op: Operation, driver, module: ModuleOp):
        self.op = op
        self.driver = driver
        self.module = module
        self.reverse = isinstance(op, ez.AutoDiffOp)
        operands = iter(op.operands)
        results = iter(op.results)
        self.args: list[_Arg] = []
        for a in op.arg_activities:
            primal = next(operands)
            carries = a.is_dup or (a.is_active and not self.reverse)
            self.args.append(_Arg(primal, next(operands) if carries else None, a))
        self.rets: list[_Ret] = [_Ret(a) for a in op.ret_activities]
        if self.reverse:
            for r in self.rets:
                if r.activity.is_active:
                    r.seed = next(operands)
            for r in self.rets:
                if r.activity.needs_primal:
                    r.primal = next(results)
            for arg in self.args:
                if arg.activity.is_active:
                    arg.derivative_out = next(results)
        else:
            for r in self.rets:
                if r.activity.needs_primal:
                    r.primal = next(results)
                if not r.activity.is_const:
                    r.tangent = next(results)

    # ---- the callee's dependences -------------------------------------------------
    def _dependences(self) -> list[set[int]] | None:
        """For each result, the arguments its derivative depends on; None when the
        callee touches memory (then everything may depend on everything)."""
        from zymase.autodiff.common import Context, prepare
        from zymase.autodiff.flavor import flavor_of

        fop = self.driver.lookup_function(self.op.fn.root_reference.data)
        if fop is None or not getattr(fop, "body", None) or not fop.body.blocks:
            return None
        if _touches_memory(fop):
            return None
        flavor = flavor_of(fop)
        ctx = Context(self.module, flavor, self.driver)
        deps: list[set[int]] = [set() for _ in self.rets]
        for i, arg in enumerate(self.args):
            if not is_float_type(arg.primal.type):
                continue
            arg_acts = [A.ACTIVE if j == i else A.CONST for j in range(len(self.args))]
            p = prepare(ctx, fop, arg_acts, [A.ACTIVE] * len(self.rets))
            for k, v in enumerate(p.returned):
                if v in p.activity.varied:
                    deps[k].add(i)
        return deps

    # ---- rules ----------------------------------------------------------------------
    def optimize(self) -> None:
        before = ([a.activity for a in self.args], [r.activity for r in self.rets])
        zeroed: list[SSAValue] = []  # results whose uses become a constant zero
        deps = self._dependences()
        changed = True
        while changed:
            changed = self._reverse_rules(deps, zeroed) if self.reverse else self._forward_rules(deps, zeroed)
        after = ([a.activity for a in self.args], [r.activity for r in self.rets])
        if after != before:
            self._rebuild(zeroed)

    def _set(self, obj, activity: Activity) -> bool:
        if obj.activity == activity:
            return False
        obj.activity = activity
        return True

    def _reverse_rules(self, deps, zeroed) -> bool:
        changed = False
        for r in self.rets:
            if r.activity.needs_primal and r.primal is not None and not r.primal.uses:
                changed |= self._set(r, _noneed(r.activity))
        for arg in self.args:
            if arg.activity.is_active and (arg.derivative_out is None or not arg.derivative_out.uses):
                changed |= self._set(arg, A.CONST)
        has_dup = any(a.activity.is_dup for a in self.args)
        for k, r in enumerate(self.rets):
            if not r.activity.is_active:
                continue
            reaches = has_dup or deps is None or any(
                self.args[i].activity.is_active for i in deps[k]
            )
            if _is_zero(r.seed) or not reaches:
                changed |= self._set(r, _const(r.activity))
        for i, arg in enumerate(self.args):
            if not arg.activity.is_active or has_dup or deps is None:
                continue
            if not any(r.activity.is_active and i in deps[k] for k, r in enumerate(self.rets)):
                zeroed.append(arg.derivative_out)
                changed |= self._set(arg, A.CONST)
        return changed

    def _forward_rules(self, deps, zeroed) -> bool:
        changed = False
        for r in self.rets:
            if r.activity.needs_primal and r.primal is not None and not r.primal.uses:
                changed |= self._set(r, _noneed(r.activity))
            if not r.activity.is_const and (r.tangent is None or not r.tangent.uses):
                changed |= self._set(r, _const(r.activity))
        for arg in self.args:
            scalar = is_float_type(arg.primal.type)
            if scalar and not arg.activity.is_const and _is_zero(arg.derivative_in):
                changed |= self._set(arg, A.CONST)
        if deps is None:
            return changed
        for i, arg in enumerate(self.args):
            if arg.activity.is_const or not is_float_type(arg.primal.type):
                continue
            if not any(not r.activity.is_const and i in deps[k] for k, r in enumerate(self.rets)):
                changed |= self._set(arg, A.CONST)
        for k, r in enumerate(self.rets):
            if r.activity.is_const:
                continue
            if not any(not self.args[i].activity.is_const for i in deps[k]):
                zeroed.append(r.tangent)
                changed |= self._set(r, _const(r.activity))
        return changed

    # ---- rewriting --------------------------------------------------------------------
    def _rebuild(self, zeroed: list[SSAValue]) -> None:
        """Replace the op by one with the new activities, operands and results."""
        from zymase.autodiff.flavor import Emitter, flavor_of

        op = self.op
        operands: list[SSAValue] = []
        for arg in self.args:
            operands.append(arg.primal)
            if arg.activity.is_dup or (arg.activity.is_active and not self.reverse):
                operands.append(arg.derivative_in)
        kept: list[SSAValue] = []  # old results, in the new op's result order
        if self.reverse:
            operands += [r.seed for r in self.rets if r.activity.is_active]
            kept += [r.primal for r in self.rets if r.activity.needs_primal]
            kept += [a.derivative_out for a in self.args if a.activity.is_active]
        else:
            for r in self.rets:
                if r.activity.needs_primal:
                    kept.append(r.primal)
                if not r.activity.is_const:
                    kept.append(r.tangent)
        new = type(op)(
            op.fn,
            operands,
            [v.type for v in kept],
            [a.activity for a in self.args],
            [r.activity for r in self.rets],
        )
        new.location = op.location
        for name, attr in op.attributes.items():
            new.attributes[name] = attr
        block = op.parent_block()
        block.insert_op_before(new, op)
        for old, fresh in zip(kept, new.results):
            fresh.name_hint = old.name_hint
            old.replace_all_uses_with(fresh)
        if zeroed:
            E = Emitter(flavor_of(_enclosing_function(op)), self.module).before(new)
            for v in zeroed:
                if v is not None and v.uses:
                    zero = E.zero(v.type)
                    zero.name_hint = v.name_hint
                    v.replace_all_uses_with(zero)
        block.erase_op(op)


def _enclosing_function(op: Operation) -> Operation:
    parent = op.parent_op()
    while parent is not None and not hasattr(parent, "sym_name"):
        parent = parent.parent_op()
    return parent


def _is_zero(v: SSAValue | None) -> bool:
    """A scalar float constant equal to zero (of either sign)."""
    if v is None or not is_float_type(v.type):
        return False
    owner = v.owner
    if isinstance(owner, llvm.ZeroOp):
        return True
    if isinstance(owner, (arith.ConstantOp, llvm.ConstantOp)):
        value = owner.value
        return isinstance(value, FloatAttr) and value.value.data == 0.0
    return False


def _touches_memory(fop: Operation) -> bool:
    """Whether a function takes, makes or reaches memory (or calls anything):
    derivatives may then travel through shadow memory."""
    from zymase.autodiff.flavor import is_differentiable_type

    ftype = fop.function_type
    inputs = list(ftype.inputs.data)
    if any(not (is_differentiable_type(t) or isinstance(t, (IntegerType, IndexType))) for t in inputs):
        return True
    for inner in fop.body.walk():
        if inner.dialect_name() in ("memref", "linalg") or isinstance(
            inner, (llvm.LoadOp, llvm.StoreOp, llvm.CallOp, llvm.CallIntrinsicOp)
        ):
            return True
        if inner.name == "func.call":
            return True
    return False
