"""Lowering ``jax.custom_jvp`` / ``jax.custom_vjp`` calls so that zymase can apply their rules.

JAX lowers a function with a custom rule to its primal alone: the rule is in the traced
jaxpr (a ``custom_jvp_call`` / ``custom_vjp_call`` equation) but not in the StableHLO. While
zymase lowers a function (``frontends/jax.py``), those two primitives lower instead to a
marker ``stablehlo.custom_call @zymase.custom_jvp`` / ``@zymase.custom_vjp`` on the call's
operands, whose ``called_computations`` are private functions holding the primal and the
rule, lowered from the rule's jaxprs:

* custom_vjp: ``[primal, fwd, bwd]``; ``fwd(inputs) -> (residuals..., outputs...)`` and
  ``bwd(residuals..., cotangents of the float outputs) -> cotangents of the float inputs``;
* custom_jvp: ``[primal, jvp]``; ``jvp(inputs, tangents of the float inputs) -> (outputs...,
  tangents of the float outputs)``.

Zeros are materialized (a rule with ``symbolic_zeros=True`` sees arrays of zeros, as JAX
gives it when it instantiates them; every input counts as perturbed), and a ``None`` a bwd
returns becomes zeros. The marker's ``backend_config`` (JSON) says which operands are the
call's closed-over constants, which residuals are inputs passed through, which inputs and
outputs are floats, which operands each rule function takes first (traced values the rule
closes over, ``_function``), and names the rule for refusals. ``autodiff/rules/stablehlo_custom.py``
differentiates the marker; what is not differentiated runs the primal. Calls nested inside
a rule or a primal of another marker lower as JAX lowers them (they run, they are not
differentiated).

JAX's own functions with custom rules (``jax.nn.relu``, ``jnp.logaddexp``, ...) are marked
too, so zymase agrees with ``jax.grad`` at their kinks and ties. Rules of ``zymase.jax.jit`` (a custom_vjp whose backward pass is zymase's own derivative of
the same primal, through a JAX primitive zymase cannot differentiate) lower as their primal.
"""

from __future__ import annotations

import contextvars
import json
import os

import numpy as np
from jax._src import core, custom_derivatives, source_info_util
from jax._src import linear_util as lu
from jax._src.interpreters import ad, partial_eval as pe
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir as jax_ir
from jax._src.lib.mlir.dialects import func as jax_func

import zymase
from zymase.errors import ZymaseError
from zymase.ir.stablehlo import CUSTOM_JVP_TARGET, CUSTOM_VJP_TARGET

# whether the custom rules met now are marked (zymase lowers the user's function, outside
# any other marked call)
_MARKING = contextvars.ContextVar("zymase_marks_custom_rules", default=False)
_ZYMASE_DIR = os.path.dirname(os.path.abspath(zymase.__file__)) + os.sep


def marking(closed_jaxpr):
    """Context manager: mark custom rules while zymase lowers the function traced to
    ``closed_jaxpr``."""
    return _Marking(closed_jaxpr)


class _Marking:
    def __init__(self, closed_jaxpr):
        self.state = _LoweringState()
        _record_operands(closed_jaxpr.jaxpr, self.state.operands)

    def __enter__(self):
        self._tokens = (_MARKING.set(True), _STATE.set(self.state))

    def __exit__(self, *exc):
        _MARKING.reset(self._tokens[0])
        _STATE.reset(self._tokens[1])


class _LoweringState:
    """What the lowering of one function keeps across its custom calls."""

    def __init__(self):
        # the inputs of each traced custom call equation, by its call_jaxpr (None when
        # equations share it with different inputs): a rule's traced constants are found
        # among them (_function)
        self.operands: dict[int, list | None] = {}
        # the rule functions lowered, by (call_jaxpr, rule thunk): JAX traces a jitted
        # custom function (jax.nn.relu) once, and its calls share the functions
        self.rules: dict[tuple[int, int], tuple[list[str], dict]] = {}
        # JAX's caches for what rule functions lower: unmarked, so kept apart from the
        # module's own (a jitted helper shared with marked code is lowered twice)
        self.cached_primitive_lowerings: dict = {}
        self.lowering_cache: dict = {}


_STATE: contextvars.ContextVar[_LoweringState | None] = contextvars.ContextVar("zymase_custom_rules", default=None)


def _record_operands(jaxpr, table: dict) -> None:
    for eqn in jaxpr.eqns:
        if eqn.primitive.name in ("custom_jvp_call", "custom_vjp_call"):
            key, invars = id(eqn.params["call_jaxpr"]), list(eqn.invars)
            table[key] = invars if table.get(key, invars) == invars else None
        for sub in core.jaxprs_in_params(eqn.params):
            _record_operands(sub, table)


def _definition(call_jaxpr) -> tuple[str, str | None]:
    """The rule's function name and ``file:line`` (JAX's debug info: ``"f at file:line"``)."""
    info = getattr(getattr(call_jaxpr, "jaxpr", None), "debug_info", None)
    text = getattr(info, "func_src_info", None)
    if not text or " at " not in text:
        return getattr(info, "func_name", None) or "<unknown>", None
    name, where = text.rsplit(" at ", 1)
    return name, where


def _is_zymase_jit(where: str | None) -> bool:
    return where is not None and os.path.abspath(where.rsplit(":", 1)[0]).startswith(_ZYMASE_DIR)


def call_site(ctx) -> str | None:
    frame = source_info_util.user_frame(ctx.traceback) if ctx.traceback is not None else None
    return f"{frame.file_name}:{frame.start_line}" if frame is not None else None


def is_float(aval) -> bool:
    return np.issubdtype(aval.dtype, np.inexact)


def _zeros(aval):
    """A zero tangent/cotangent of ``aval`` as JAX passes it to a rule (float0 for integers)."""
    tangent = aval.to_tangent_aval()
    return np.zeros(tangent.shape, tangent.dtype) if tangent.dtype == custom_derivatives.dtypes.float0 \
        else ad.instantiate_zeros(ad.Zero(tangent))


def _traced(fn, avals, name: str) -> core.ClosedJaxpr:
    wrapped = lu.wrap_init(fn, debug_info=core.DebugInfo(name, name, None, None))
    jaxpr, _, consts = pe.trace_to_jaxpr_dynamic(wrapped, list(avals))
    return core.ClosedJaxpr(jaxpr, consts)


class _Untraceable(Exception):
    """A rule's jaxpr holds a traced value that is not an operand of the call."""


def _function(ctx, name: str, closed: core.ClosedJaxpr, operands=None) -> tuple[str, list[int]]:
    """Lower ``closed`` to a private ``func.func`` of the module being lowered (constants
    inline, no tokens); returns its symbol name and the operands of the call it takes
    first. A rule may close over values traced in the user's function (a custom_jvp's
    ``nondiff_argnums`` tracers, closures): JAX traces rules inside its own trace, zymase
    after it, so these are dead tracers here; each must be one of the call's ``operands``
    (the traced equation's inputs), and the function takes it as a leading argument.
    Lowered with JAX's caches for unmarked code (``_LoweringState``)."""
    captured = [_operand_index(c, operands) for c in closed.consts if isinstance(c, core.Tracer)]
    if captured:
        closed = _with_tracers_as_arguments(closed)
    state = _STATE.get()
    mc = ctx.module_context.replace(cached_primitive_lowerings=state.cached_primitive_lowerings,
                                    lowering_cache=state.lowering_cache)
    in_types = [jax_mlir.aval_to_ir_type(mc, a) for a in closed.in_avals]
    out_types = [jax_mlir.aval_to_ir_type(mc, a) for a in closed.out_avals]
    fop = jax_func.FuncOp(name, jax_ir.FunctionType.get(in_types, out_types), ip=mc.ip)
    fop.attributes["sym_visibility"] = jax_ir.StringAttr.get("private")
    symbol = mc.symbol_table.insert(fop).value
    block = fop.add_entry_block()
    with jax_ir.InsertionPoint(block):
        consts = jax_mlir.ir_consts(closed.consts, [v.aval for v in closed.jaxpr.constvars])
        outs, _ = jax_mlir.jaxpr_subcomp(mc, closed.jaxpr, source_info_util.new_name_stack(), jax_mlir.TokenSet(),
                                         consts, *block.arguments, dim_var_values=[], const_lowering={},
                                         outer_traceback=None)
        jax_func.ReturnOp([v for out in outs for v in (out if isinstance(out, (list, tuple)) else [out])])
    return symbol, captured


def _operand_index(tracer, operands) -> int:
    var = getattr(tracer, "val", None)
    for i, v in enumerate(operands or ()):
        if v is var:
            return i
    raise _Untraceable


def _with_tracers_as_arguments(closed: core.ClosedJaxpr) -> core.ClosedJaxpr:
    """``closed`` with its traced constants moved to leading arguments (in their order)."""
    traced = [isinstance(c, core.Tracer) for c in closed.consts]
    jaxpr = closed.jaxpr
    moved = [v for v, t in zip(jaxpr.constvars, traced) if t]
    kept = [v for v, t in zip(jaxpr.constvars, traced) if not t]
    jaxpr = jaxpr.replace(constvars=kept, invars=[*moved, *jaxpr.invars],
                          debug_info=jaxpr.debug_info.with_unknown_names())
    return core.ClosedJaxpr(jaxpr, [c for c, t in zip(closed.consts, traced) if not t])


def _untraceable(kind: str, name: str, where: str | None, ctx) -> ZymaseError:
    defined = f" (defined at {where})" if where else ""
    return ZymaseError(f"the {kind} rule of '{name}'{defined} closes over a value computed in the function "
                       "that the custom function does not take as an argument, which zymase cannot lower "
                       "with the rule", construct=kind, location=call_site(ctx),
                       hint="pass the value to the custom function as an argument (nondiff_argnums for "
                            "custom_jvp)")


def marker(ctx, target: str, args, functions: list[str], config: dict):
    result_types = [jax_mlir.aval_to_ir_type(ctx.module_context, a) for a in ctx.avals_out]
    op = jax_mlir.custom_call(target, result_types=result_types, operands=list(args),
                              backend_config=json.dumps(config), called_computations=functions)
    return list(op.results)


def lowering_for_zymase() -> bool:
    """Whether zymase is lowering a function now (its custom rules' functions included)."""
    return _STATE.get() is not None


def lower_rule_functions(ctx, functions) -> list[str]:
    """Lower each ``(name, fn, avals)`` (a Python function of arrays shaped ``avals``, closing
    over no traced value) to a private function of the module, as a rule's functions are
    lowered (nothing marked inside); returns their symbol names."""
    token = _MARKING.set(False)
    try:
        return [_function(ctx, name, _traced(fn, avals, name))[0] for name, fn, avals in functions]
    finally:
        _MARKING.reset(token)


def _lower_custom_vjp(ctx, *args, call_jaxpr, fwd_jaxpr_thunk, bwd, num_consts, out_trees, symbolic_zeros):
    name, where = _definition(call_jaxpr)
    if not _MARKING.get() or _is_zymase_jit(where):
        return _lower_primal(ctx, *args, call_jaxpr=call_jaxpr)
    token = _MARKING.set(False)  # what the rule and the primal call runs, it does not differentiate
    state = _STATE.get()
    if (key := (id(call_jaxpr), id(fwd_jaxpr_thunk))) in state.rules:
        _MARKING.reset(token)
        functions, config = state.rules[key]
        return marker(ctx, CUSTOM_VJP_TARGET, args, functions, dict(config, called=call_site(ctx)))
    operands = state.operands.get(id(call_jaxpr))
    try:
        in_avals = call_jaxpr.in_avals[num_consts:]
        out_avals = call_jaxpr.out_avals
        primal, _ = _function(ctx, "zymase_custom_primal", call_jaxpr)
        fwd_jaxpr, fwd_consts = fwd_jaxpr_thunk.call_wrapped(*[True] * len(in_avals))
        fwd_closed = core.ClosedJaxpr(fwd_jaxpr, fwd_consts)
        _, res_tree, input_fwds = out_trees()
        res_out = iter(fwd_closed.out_avals)
        # a residual that is an operand passed through is counted among all operands
        res_avals = [next(res_out) if f is None else call_jaxpr.in_avals[f] for f in input_fwds]
        float_in = [is_float(a) for a in in_avals]
        float_out = [is_float(a) for a in out_avals]

        def bwd_floats(*xs):
            res, cts = xs[:len(res_avals)], iter(xs[len(res_avals):])
            cts_all = [next(cts) if f else _zeros(a) for a, f in zip(out_avals, float_out)]
            cts_in = bwd.call_wrapped(*res, *cts_all)
            return [ad.instantiate_zeros(c) for c, f in zip(cts_in, float_in) if f]

        bwd_closed = _traced(bwd_floats, [*res_avals, *(a for a, f in zip(out_avals, float_out) if f)], "bwd")
        fwd, fwd_captured = _function(ctx, "zymase_custom_fwd", fwd_closed, operands)
        bwd_function, bwd_captured = _function(ctx, "zymase_custom_bwd", bwd_closed, operands)
    except _Untraceable:
        raise _untraceable("jax.custom_vjp", name, where, ctx) from None
    finally:
        _MARKING.reset(token)
    config = {"rule": name, "defined": where, "called": call_site(ctx), "consts": num_consts,
              "forwarded": list(input_fwds), "float_in": float_in, "float_out": float_out,
              "captured": [[], fwd_captured, bwd_captured]}
    state.rules[key] = ([primal, fwd, bwd_function], config)
    return marker(ctx, CUSTOM_VJP_TARGET, args, [primal, fwd, bwd_function], config)


def _lower_custom_jvp(ctx, *args, call_jaxpr, jvp_jaxpr_fun, num_consts, symbolic_zeros):
    name, where = _definition(call_jaxpr)
    if not _MARKING.get():
        return _lower_primal(ctx, *args, call_jaxpr=call_jaxpr)
    token = _MARKING.set(False)
    state = _STATE.get()
    if (key := (id(call_jaxpr), id(jvp_jaxpr_fun))) in state.rules:
        _MARKING.reset(token)
        functions, config = state.rules[key]
        return marker(ctx, CUSTOM_JVP_TARGET, args, functions, dict(config, called=call_site(ctx)))
    operands = state.operands.get(id(call_jaxpr))
    try:
        in_avals = call_jaxpr.in_avals[num_consts:]
        out_avals = call_jaxpr.out_avals
        float_in = [is_float(a) for a in in_avals]
        float_out = [is_float(a) for a in out_avals]
        primal, _ = _function(ctx, "zymase_custom_primal", call_jaxpr)
        jvp_jaxpr, jvp_consts, out_zeros = jvp_jaxpr_fun.call_wrapped(*[False] * len(in_avals))

        def jvp_floats(*xs):
            primals, tangents = xs[:len(in_avals)], iter(xs[len(in_avals):])
            all_tangents = [next(tangents) if f else _zeros(a) for a, f in zip(in_avals, float_in)]
            out = core.eval_jaxpr(jvp_jaxpr, jvp_consts, *primals, *all_tangents)
            outs, nonzero = out[:len(out_zeros)], iter(out[len(out_zeros):])
            tangents_out = [_zeros(a) if z else next(nonzero) for a, z in zip(out_avals, out_zeros)]
            return [*outs, *(t for t, f in zip(tangents_out, float_out) if f)]

        jvp_closed = _traced(jvp_floats, [*in_avals, *(a for a, f in zip(in_avals, float_in) if f)], "jvp")
        jvp, jvp_captured = _function(ctx, "zymase_custom_jvp", jvp_closed, operands)
    except _Untraceable:
        raise _untraceable("jax.custom_jvp", name, where, ctx) from None
    finally:
        _MARKING.reset(token)
    config = {"rule": name, "defined": where, "called": call_site(ctx), "consts": num_consts,
              "float_in": float_in, "float_out": float_out, "captured": [[], jvp_captured]}
    state.rules[key] = ([primal, jvp], config)
    return marker(ctx, CUSTOM_JVP_TARGET, args, [primal, jvp], config)


def _lower_primal(ctx, *args, call_jaxpr, **_):
    return custom_derivatives._custom_jvp_vjp_call_lowering(ctx, *args, call_jaxpr=call_jaxpr)


jax_mlir.register_lowering(custom_derivatives.custom_vjp_call_p, _lower_custom_vjp, cacheable=False)
jax_mlir.register_lowering(custom_derivatives.custom_jvp_call_p, _lower_custom_jvp, cacheable=False)
