"""The JAX front end: a JAX function lowered to StableHLO, differentiated by zymase,
run by XLA inside JAX.

1. **Lower** (``lower``): ``jax.jit(flat_f, keep_unused=True).trace(*avals)`` on the
   flattened arguments, then lowered (custom_vjp/custom_jvp calls as markers carrying
   their rules, ``jax_custom_rules``; ``custom_linear_solve`` with its derivative,
   ``jax_linear_solve``), printed in MLIR's generic op form and
   parsed by ``ir.parse_mlir`` (the StableHLO dialect of ``ir/stablehlo.py``).
2. **Differentiate**: ``transforms/hlo_rewrites.simplify`` (its exact patterns) simplifies
   the user's function, ``autodiff/hlo.reverse`` / ``forward`` rewrite ``@main``, then
   ``simplify`` (all patterns but on the primal ops) folds what the rules left (``x + 0``, transposes
   of transposes, broadcasts of splats), merges duplicates and drops dead code;
   ``hlo_xla_cpu.lower`` makes large zero pads updates of a separate zero fill and small
   contractions multiply-and-reduce (what XLA's CPU backend runs faster).
3. **Run**: the derivative module is printed back (generic form) and called through
   the JAX primitive ``zymase_stablehlo_call``, whose lowering rule parses the text
   into the lowering context with jaxlib's own MLIR bindings, merges it into the
   module being compiled (``mlir.merge_mlir_modules``) and calls it. So the
   derivative is part of the caller's XLA program: it runs on the same device, and
   inside ``jax.jit`` it is compiled together with the code around it.

Derivative modules are cached per (function, argument shapes and dtypes, mode,
active arguments). Only this module, ``jax_custom_rules`` and ``zymase/jax.py`` import JAX.
"""

from __future__ import annotations

import contextvars
import functools
import re

import jax
import numpy as np
from jax._src import ad_util, dispatch
from jax.interpreters import ad, batching
from jax._src.interpreters import mlir as jax_mlir
from jax._src.lib.mlir import ir as jax_ir
from jax._src.lib.mlir.dialects import func as jax_func
from jax.core import ShapedArray
from jax.extend.core import Primitive

from zymase.autodiff import hlo as hlo_ad
from zymase.errors import ZymaseError
from zymase.frontends import jax_custom_rules, jax_linear_solve
from zymase.transforms import hlo_rewrites, hlo_xla_cpu
from zymase.ir import FileLineColLoc, IntAttr, ModuleOp, StringAttr, parse_mlir, print_mlir
from zymase.ir.stablehlo import STOP_GRADIENT_TARGET

# ----- running a StableHLO module inside JAX ----------------------------------------
call_p = Primitive("zymase_stablehlo_call")
call_p.multiple_results = True
call_p.def_impl(functools.partial(dispatch.apply_primitive, call_p))
call_p.def_abstract_eval(lambda *avals, text, out_avals: list(out_avals))


def _lower_call(ctx, *args, text, out_avals):
    if '"lapack_' in text:  # jaxlib binds its LAPACK kernels when JAX lowers a call of one, not before
        from jax._src.lax import linalg as jax_linalg

        jax_linalg.initialize_lapack()
    module = jax_ir.Module.parse(text, context=ctx.module_context.context)
    name = jax_mlir.merge_mlir_modules(ctx.module_context.module, "zymase_derivative", module)
    result_types = [jax_mlir.aval_to_ir_type(ctx.module_context, a) for a in out_avals]
    call = jax_func.CallOp(result_types, jax_ir.FlatSymbolRefAttr.get(name), list(args))
    return list(call.results)


jax_mlir.register_lowering(call_p, _lower_call)


def _batch_call(args, dims, *, text, out_avals):
    """vmap of a derivative module: one call per batch element (``lax.map``), the
    unbatched operands shared. Correct for any module; a module generated for the
    batched shapes would be faster (not done)."""
    mapped = [i for i, d in enumerate(dims) if d is not None]  # None: not batched
    moved = [jax.numpy.moveaxis(args[i], dims[i], 0) for i in mapped]

    def one(xs):
        full = list(args)
        for i, x in zip(mapped, xs):
            full[i] = x
        return call_p.bind(*full, text=text, out_avals=out_avals)

    outs = jax.lax.map(one, moved)
    return list(outs), [0] * len(outs)


batching.primitive_batchers[call_p] = _batch_call


def _refuse_jax_ad_of_call(primals, tangents, *, text, out_avals):
    """JAX's own AD of a derivative module's call (``jax.jacfwd(zymase.jax.grad(f))``)
    met JAX's bare NotImplementedError, a traceback. zymase's derivatives nest through
    zymase (``zymase.jax.grad`` of code calling ``zymase.jax.grad`` lowers the inner
    call as StableHLO and differentiates it), and ``zymase.jax.jit(f)`` is ``f`` for
    JAX's reverse mode."""
    raise ZymaseError("JAX cannot differentiate the result of zymase.jax.grad / vjp / jvp "
                      "(the derivative module is a call JAX has no rule for)",
                      construct="jax transformation of a zymase derivative",
                      hint="nest zymase's own transformations (zymase.jax.grad of a function calling "
                           "zymase.jax.grad), or use zymase.jax.jit(f) where JAX differentiates f")


ad.primitive_jvps[call_p] = _refuse_jax_ad_of_call


# ----- lowering a JAX function ---------------------------------------------------------
# jax.lax.stop_gradient lowers to nothing at all: JAX's own AD acts on the jaxpr, before
# lowering. While zymase lowers a function, it lowers to a marker custom_call instead
# (hlo.STOP_GRADIENT_TARGET), which autodiff/hlo treats as a constant and removes. Outside
# zymase's lowering the rule is JAX's (the identity); it is not cached across lowerings.
_MARK_STOP_GRADIENT = contextvars.ContextVar("zymase_marks_stop_gradient", default=False)


def _lower_stop_gradient(ctx, x):
    if not _MARK_STOP_GRADIENT.get():
        return [x]
    result_type = jax_mlir.aval_to_ir_type(ctx.module_context, ctx.avals_out[0])
    return list(jax_mlir.custom_call(STOP_GRADIENT_TARGET, result_types=[result_type], operands=[x]).results)


jax_mlir.register_lowering(ad_util.stop_gradient_p, _lower_stop_gradient, cacheable=False)
jax_linear_solve.register(_MARK_STOP_GRADIENT)  # jnp.linalg.solve's custom_linear_solve, its derivative kept


def _aval(x) -> jax.ShapeDtypeStruct:
    aval = jax.typeof(x)
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype, weak_type=getattr(aval, "weak_type", False))


def python_name(f) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


@functools.lru_cache(maxsize=256)
def _lowered_text(f, in_tree, avals) -> tuple[str, tuple]:
    def flat_f(*leaves):
        args = jax.tree_util.tree_unflatten(in_tree, leaves)
        return f(*args)

    token = _MARK_STOP_GRADIENT.set(True)
    try:
        traced = jax.jit(flat_f, keep_unused=True).trace(*avals)
        if len(traced.jaxpr.jaxpr.invars) != len(avals):
            # a value traced by an enclosing jax.jit / vmap / grad that f closes over
            # becomes an extra leading parameter of the lowered function, which the
            # derivative's call did not pass (an invalid module, XLA's verifier error)
            raise ZymaseError(
                "this function closes over a value traced outside it (an argument of an enclosing "
                "jax.jit, jax.vmap or jax.grad), which zymase's derivative module cannot receive",
                construct="closed-over tracer", function=python_name(f),
                hint="pass the value as an argument of the function (argnums chooses what is differentiated)")
        with jax_custom_rules.marking(traced.jaxpr):  # custom rules lowered as markers zymase differentiates
            lowered = traced.lower()
    except ZymaseError as exc:  # a refusal while lowering a custom rule
        exc.function = exc.function or python_name(f)
        raise exc from None
    finally:
        _MARK_STOP_GRADIENT.reset(token)
    out_avals = tuple(ShapedArray(o.shape, o.dtype) for o in jax.tree_util.tree_leaves(lowered.out_info))
    module = lowered.compiler_ir("stablehlo")
    _refuse_host_callbacks(module, f)
    _drop_shardy_annotations(module)
    text = module.operation.get_asm(print_generic_op_form=True)
    return text, (lowered.out_tree, out_avals, tuple(_source_lines(module.operation)))


def _refuse_host_callbacks(module, f) -> None:
    """``jax.debug.print``, ``jax.debug.callback``, ``pure_callback`` and ``io_callback``
    lower to a custom_call into Python registered with the lowering JAX ran; the
    derivative module runs in another program, where that registration does not exist
    (and the callback has no derivative rule). Refused with the call's Python line; the
    parser stopped at its Shardy attribute before, naming a line of the lowered text."""
    for op in _nested_ops(module.operation):
        if op.name == "stablehlo.custom_call" and "callback" in str(op.attributes["call_target_name"]):
            where = _file_position(op.location)
            raise ZymaseError(
                "this function calls back into Python (jax.debug.print, jax.debug.callback, "
                "jax.pure_callback or io_callback), which zymase's derivative cannot run",
                construct="host callback", function=python_name(f),
                location=f"{where[0]}:{where[1]}:{where[2]}" if where else None,
                hint="remove the callback from the differentiated function "
                     "(print outside it), or differentiate this function with jax.grad")


def _nested_ops(op):
    """The operations inside a jaxlib operation, in pre-order (a list: callers erase some)."""
    out = []
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                out.append(inner.operation)
                out += _nested_ops(inner.operation)
    return out


def _drop_shardy_annotations(module) -> None:
    """JAX's lowering of typed PRNG keys (``jax.random.key``) constrains the key's bits
    with ``sdy.sharding_constraint`` on an ``sdy.mesh``, Shardy's partitioning
    annotations: they say nothing about the values (a constraint's value is its
    operand), and zymase's IR does not read the dialect, so a function taking a key was
    refused. Each constraint is replaced by its operand; the meshes are erased when no
    other Shardy op (``sdy.manual_computation`` of ``shard_map``, refused as unknown)
    is left to name them."""
    found = [op for op in _nested_ops(module.operation) if op.name.startswith("sdy.")]
    names = [op.name for op in found]
    for op, name in zip(found, names):
        if name == "sdy.sharding_constraint":
            op.results[0].replace_all_uses_with(op.operands[0])
            op.erase()
    if set(names) <= {"sdy.sharding_constraint", "sdy.mesh"}:
        for op, name in zip(found, names):
            if name == "sdy.mesh":
                op.erase()


def _source_lines(op) -> list[tuple[str, int, int] | None]:
    """The Python source position of every op, in pre-order: JAX records it in MLIR
    locations, which xDSL cannot read (they are printed as aliases), so they are taken
    from jaxlib's module and put on the parsed ops (``_parsed``)."""
    return [_file_position(op.location)] + [_file_position(inner.location) for inner in _nested_ops(op)]


def _file_position(loc) -> tuple[str, int, int] | None:
    if isinstance(loc, jax_ir.FileLineColLoc):
        return (loc.filename, loc.start_line, loc.start_col)
    if isinstance(loc, jax_ir.NameLoc):
        return _file_position(loc.child_loc)
    if isinstance(loc, jax_ir.CallSiteLoc):
        return _file_position(loc.callee) or _file_position(loc.caller)
    if isinstance(loc, jax_ir.FusedLoc):
        for inner in loc.locations:
            if (found := _file_position(inner)) is not None:
                return found
    return None


def lower(f, leaves, in_tree) -> tuple[object, tuple]:
    """The output tree and output avals of ``f`` at these (flattened) arguments (its
    StableHLO text is cached for the derivatives)."""
    _, (out_tree, out_avals, _) = _lowered_text(f, in_tree, tuple(_aval(x) for x in leaves))
    return out_tree, out_avals


@functools.lru_cache(maxsize=64)
def _parsed(f, in_tree, avals) -> ModuleOp:
    """The StableHLO module, parsed once: xDSL's parser is the slow step (5 ms per op
    with a dense constant), so the reverse and forward derivatives clone this."""
    text, (_, _, positions) = _lowered_text(f, in_tree, avals)
    try:
        module = parse_mlir(text, f"<{python_name(f)}>")
    except ZymaseError as exc:
        raise _unknown_op(exc, text, positions, python_name(f)) or exc from None
    ops = list(module.walk())
    if len(ops) == len(positions):
        for op, position in zip(ops, positions):
            if position is not None:
                op.location = FileLineColLoc(StringAttr(position[0]), IntAttr(position[1]), IntAttr(position[2]))
    hlo_rewrites.simplify(module, exact_only=True)  # before differentiation: less to differentiate
    return module


def _unknown_op(exc: ZymaseError, text: str, positions, function: str) -> ZymaseError | None:
    """The refusal of an op JAX emitted that the IR does not know (``chlo.top_k`` for
    ``lax.top_k``): the parser's "not registered" names a line of the lowered text the user
    never saw, so say which op it is and where in the user's Python it comes from. The
    text is in generic form, one op a line, in the pre-order of ``positions``."""
    unknown = re.search(r"Operation (\S+) is not registered", str(exc))
    line = re.search(r":(\d+):\d+$", exc.location or "")
    if unknown is None or line is None:
        return None
    starts = [re.match(r'\s*(%\S+(, %\S+)* = )?"[\w.]+"\(', l) is not None
              for l in text.splitlines()[:int(line.group(1))]]
    index = sum(starts) - 1
    where = positions[index] if starts and starts[-1] and 0 <= index < len(positions) else None
    return ZymaseError(
        f"JAX lowered this to '{unknown.group(1)}', an op zymase does not read, so it has no derivative rule",
        construct=unknown.group(1), function=function,
        location=f"{where[0]}:{where[1]}:{where[2]}" if where else None,
        hint="write it with operations zymase differentiates (jnp.sort / jnp.argsort for lax.top_k), "
             "or differentiate this function with jax.grad")


@functools.lru_cache(maxsize=256)
def _derivative_text(f, in_tree, avals, mode: str, active: tuple[bool, ...]) -> str:
    module = _parsed(f, in_tree, avals).clone()
    primal = (hlo_ad.reverse if mode == "reverse" else hlo_ad.forward)(module, active, python_name(f))
    hlo_rewrites.simplify(module, keep=primal)  # the user's own arithmetic stays IEEE
    hlo_xla_cpu.lower(module)  # no value changes: the code XLA's CPU backend makes
    return print_mlir(module)


def derivative_module(f, leaves, in_tree, mode: str, active) -> str:
    """The printed derivative (``autodiff/hlo``) of ``f`` at these arguments."""
    avals = tuple(_aval(x) for x in leaves)
    return _derivative_text(f, in_tree, avals, mode, tuple(active))


def run(text: str, args, out_avals):
    """Run a printed StableHLO module's ``@main`` on ``args`` (arrays or tracers) as
    part of the JAX program; ``out_avals`` are its results' shapes and dtypes."""
    return call_p.bind(*args, text=text, out_avals=tuple(out_avals))


def float_leaf(x) -> bool:
    return jax.numpy.issubdtype(np.dtype(jax.typeof(x).dtype), jax.numpy.floating)


# the float dtypes whose derivatives zymase computes (autodiff/hlo's differentiable
# tensors); float8 and smaller carry none, so they are refused rather than given zeros
DIFFERENTIABLE_FLOATS = ("bfloat16", "float16", "float32", "float64")


def require_float_leaves(leaves, what: str, f) -> None:
    for x in leaves:
        if not float_leaf(x):
            raise ZymaseError(f"{what} must hold floating-point arrays, not {jax.typeof(x).dtype}",
                              function=python_name(f), hint="pass floats for the arguments you differentiate")
        if str(np.dtype(jax.typeof(x).dtype)) not in DIFFERENTIABLE_FLOATS:
            raise ZymaseError(f"{what} hold a {np.dtype(jax.typeof(x).dtype)} array, whose derivative zymase does not compute",
                              function=python_name(f),
                              hint="pass bfloat16, float16, float32 or float64 arrays (convert inside the function), "
                                   "or differentiate this function with jax.grad")
