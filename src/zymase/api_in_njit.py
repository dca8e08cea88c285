"""Python API: ``zymase.jvp`` and ``zymase.vjp`` written inside njit code.

``jvp(f, primals, tangents)`` in an njit function is typed by an ``@overload`` of
:func:`zymase.api_outputs.jvp`: at each argument-type signature it compiles the forward
kernel the Python ``jvp`` would (``f`` directly for a float result, its output writer
for arrays and tuples, :mod:`zymase.api_outputs`) and generates njit glue that copies the
primals and tangents (``f`` runs on copies, as from Python), calls the kernel by symbol
(``api._kernel_intrinsic``) and returns ``(value, tangent)`` shaped as the result. Since
the call is an intrinsic of a kernel whose source is recorded, njit code that calls
``jvp`` is differentiable in turn (``frontends/numba.with_called_kernels``): ``grad`` of
it is reverse over forward, ``jvp`` of it forward over forward.

``vjp`` returns a Python closure (the pullback), which njit code cannot hold: inside njit
code it is refused by name, pointing at ``grad`` and at ``vjp`` from Python.
"""

from __future__ import annotations

import numpy as np

from zymase import api
from zymase.api import _copy_expr, _exec, _is_float_array, _Names, _np_dtype, _Plan, _tangent_activity
from zymase.api_aliasing import njit_overlap_checks
from zymase.api_outputs import _leaf_types, _result_type, _writer, jvp, vjp
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn
from zymase.njit_call_site import naming_the_call_site

#: what the njit glue passes as options: the Python defaults (kernels in memory only,
#: unless the function's own cache option says otherwise)
_OPTION_NAMES = ("preopt", "cache", "strong_zero")


def _original(disp):
    """The user's dispatcher behind a private copy (a transform of njit code that calls
    ``jvp`` types it on the copy): its kernels are shared with calls from Python."""
    return getattr(disp, "zymase_original", disp)


def _copied_type(ty):
    """The Numba type of ``x.copy()`` (C layout, writable), per element for tuples."""
    from numba.core import types

    if isinstance(ty, types.Array):
        return ty.copy(layout="C", readonly=False)
    if isinstance(ty, types.BaseTuple):
        return types.BaseTuple.from_types([_copied_type(t) for t in ty.types])
    return ty.literal_type if isinstance(ty, types.Literal) else ty


def _check_tangent(ty, tty, what: str):
    """A tangent of type ``tty`` for a primal of type ``ty`` (``None``: constant), checked
    at typing time; shapes are checked at run time."""
    from numba.core import types

    def bad(expected: str):
        return ZymaseError(f"jvp inside njit code: the tangent of {what} has type {tty}, but the primal has type "
                           f"{ty}", hint=f"pass {expected}, or None to hold it constant")

    if isinstance(tty, (types.NoneType, types.Omitted)):
        return
    if isinstance(ty, types.BaseTuple):
        if not isinstance(tty, types.BaseTuple) or len(tty.types) != len(ty.types):
            raise bad(f"a tuple of {len(ty.types)} tangents")
        for i, (a, b) in enumerate(zip(ty.types, tty.types)):
            _check_tangent(a, b, f"{what}[{i}]")
        return
    if isinstance(ty, types.Float):
        if not isinstance(tty, (types.Float, types.Integer)) or isinstance(tty, types.Boolean):
            raise bad("a real number")
        return
    if _is_float_array(ty):
        if not (isinstance(tty, types.Array) and tty.ndim == ty.ndim and isinstance(tty.dtype, (types.Float,
                                                                                              types.Integer))):
            raise bad(f"a real array of {ty.ndim} dimension{'s' if ty.ndim != 1 else ''}")
        return
    raise ZymaseError(f"jvp inside njit code: {what} has type {ty}, which has no tangent, but its tangent has type "
                      f"{tty}", hint="integers are constant: pass None as their tangent")


class _Glue:
    """The njit source of one jvp call at one signature."""

    def __init__(self, params):
        self.names = _Names(params)
        self.env: dict = {"np": np}
        self.names.taken.add("np")
        self.lines: list[str] = []

    def const(self, base: str, value) -> str:
        n = self.names.fresh(base)
        self.env[n] = value
        return n

    def let(self, base: str, expr: str) -> str:
        n = self.names.fresh(base)
        self.lines.append(f"{n} = {expr}")
        return n


def _shape_check(g: _Glue, x: str, t: str, what: str) -> None:
    err = g.const("error", ZymaseError)
    g.lines.append(f"if {t}.shape != {x}.shape:")
    message = (f"jvp inside njit code: the tangent of {what} differs in shape from it; hint: pass a tangent "
               "shaped like the primal")
    g.lines.append(f"    raise {err}({message!r})")


def _tangent_expr(g: _Glue, ty, act, x: str, t: str | None, tty, what: str) -> str:
    """njit source for the kernel's shadow of one argument: the tangent copied into the
    primal's dtype, zeros for a constant one that was promoted, the value itself for
    integers inside a tuple."""
    from numba.core import types

    none = tty is None or isinstance(tty, (types.NoneType, types.Omitted))
    if isinstance(ty, types.BaseTuple):
        parts = [_tangent_expr(g, ty.types[i], act[i] if isinstance(act, tuple) else act, f"{x}[{i}]",
                               None if none else f"{t}[{i}]", None if none else tty.types[i], f"{what}[{i}]")
                 for i in range(len(ty.types))]
        return "(" + "".join(p + ", " for p in parts) + ")"
    if isinstance(ty, types.Array):
        if not zn.has_shadow(act):
            return x
        dt = g.const("dt", _np_dtype(ty.dtype))
        if none:
            return f"np.zeros({x}.shape, {dt})"
        _shape_check(g, x, t, what)
        return f"np.ascontiguousarray({t}).astype({dt})"
    if isinstance(ty, types.Float):
        dt = g.const("dt", _np_dtype(ty))
        return f"{dt}(0.0)" if none else f"{dt}({t})"
    return x


def _jvp_impl(f, primals, tangents=None, preopt=True, cache=None, strong_zero=True):
    """The overload's typer: njit glue for ``jvp(f, primals, tangents)`` at these types."""
    from numba.core import types

    if not isinstance(f, types.Dispatcher):
        raise ZymaseError(f"jvp inside njit code takes an njit function as 'f', got {f}",
                          hint="pass the @numba.njit function itself")
    for name, opt, default in zip(_OPTION_NAMES, (preopt, cache, strong_zero), (True, None, True)):
        if not (opt is default or isinstance(opt, types.Omitted)):
            raise ZymaseError(f"jvp inside njit code takes no '{name}' option",
                              hint="options are given to zymase.jvp called from Python; inside njit code call "
                              "jvp(f, primals, tangents)")
    disp = _original(f.dispatcher)
    names = api._param_names(disp)
    label = zn.function_label(disp)
    if tangents is None or isinstance(tangents, types.Omitted):
        # the default only exists so that a call without it reaches this error, not Numba's binding one
        raise ZymaseError(f"jvp inside njit code takes three arguments (f, primals, tangents); the tangents of "
                          f"{label} are missing", hint="jvp(f, (x, a), (dx, da)); None holds a primal constant")
    for what, v in (("primals", primals), ("tangents", tangents)):
        if not isinstance(v, types.BaseTuple):
            raise ZymaseError(f"jvp inside njit code takes '{what}' as a tuple with one entry per parameter of "
                              f"{label}, got {v}", hint="jvp(f, (x, a), (dx, da)); a single argument is (x,)")
    if len(primals.types) != len(tangents.types):
        raise ZymaseError(f"jvp inside njit code got {len(primals.types)} primals but {len(tangents.types)} tangents",
                          hint="'tangents' holds one tangent (or None) per primal")
    defaults = disp.py_func.__defaults__ or ()
    given = len(primals.types)
    if not len(names) - len(defaults) <= given <= len(names):
        raise api._arity_error(disp, names, given, "'primals' holds one value per parameter")
    g = _Glue(["f", "primals", "tangents", *_OPTION_NAMES])
    xs, prim, tts = [], [], []
    for i in range(len(names)):
        what = api._label(names, i)
        if i < given:
            ty = primals.types[i]
            api._check_type(ty.copy(layout="C") if isinstance(ty, types.Array) else ty, what)
            xs.append(g.let("x", _copy_expr(ty, f"primals[{i}]")))
            _check_tangent(_copied_type(ty), tangents.types[i], what)
            tts.append(tangents.types[i])
        else:  # a trailing parameter left out: its default, constant
            value = defaults[i - len(names) + len(defaults)]
            xs.append(g.const("default", value))
            ty = api._typeof(value, what)
            tts.append(None)
        prim.append(_copied_type(ty))
    prim = tuple(prim)
    # primals that overlap at run time where f writes: refused, as for grad (f runs on
    # a copy of each, which would not see its writes through one in the other)
    checks, env = njit_overlap_checks(disp, names, primals.types, "jvp", g.names.fresh("overlap"),
                                      g.names.fresh("error"), [f"primals[{i}]" for i in range(given)])
    g.lines[:0] = checks
    g.env.update(env)
    acts = tuple(api._const_activity(t) if tt is None or isinstance(tt, (types.NoneType, types.Omitted))
                 else _tangent_activity(t) for t, tt in zip(prim, tts))
    rt = _result_type(disp, prim, "jvp")
    opts = api._options(disp, True, None, True)[1]
    if isinstance(rt, types.Float):
        plan = _Plan(disp, prim, acts, "fwd", opts, promote=True)
        out_leaves = None
    else:
        # the result's shapes from one primal call (as _Linear), then the output writer
        leaves = _leaf_types(rt)
        value = g.let("value", f"f({''.join(x + ', ' for x in xs)})")
        exprs, out_types = [], []
        _leaf_exprs(rt, value, exprs)
        outs, douts = [], []
        for lt, e in zip(leaves, exprs):
            dt = g.const("dt", _np_dtype(lt.dtype if isinstance(lt, types.Array) else lt))
            shape = f"{e}.shape" if isinstance(lt, types.Array) else "1"
            outs.append(g.let("out", f"np.empty({shape}, {dt})"))
            douts.append(g.let("dout", f"np.zeros({shape}, {dt})"))
            out_types.append(types.Array(lt.dtype if isinstance(lt, types.Array) else lt,
                                         lt.ndim if isinstance(lt, types.Array) else 1, "C"))
        # every float argument carries a tangent (zeros for a None one), as from Python
        # (api_outputs._Linear.push_lanes): one kernel serves both, and jacfwd too
        every = tuple(_tangent_activity(t) for t in prim)
        plan = _Plan(_writer(disp, rt), prim + tuple(out_types), every + (zn.DUP,) * len(leaves), "fwd", opts,
                     promote=True)
        out_leaves = (leaves, outs, douts)
    call = g.const("call", plan.call)
    kargs = []
    for i, (x, ty, act) in enumerate(zip(xs, prim, plan.activities)):
        kargs.append(x)
        if zn.has_shadow(act):
            tty = tts[i]
            kargs.append(g.let("t", _tangent_expr(g, ty, act, x, f"tangents[{i}]" if tty is not None else None, tty,
                                                  api._label(names, i))))
    if out_leaves is None:
        r = g.let("r", f"{call}(({''.join(k + ', ' for k in kargs)}))")
        ret = f"({r}[0], {r}[1])"
    else:
        leaves, outs, douts = out_leaves
        for o, d in zip(outs, douts):
            kargs += [o, d]
        g.lines.append(f"{call}(({''.join(k + ', ' for k in kargs)}))")
        it_v = iter([f"{o}[0]" if not isinstance(lt, types.Array) else o for lt, o in zip(leaves, outs)])
        it_d = iter([f"{d}[0]" if not isinstance(lt, types.Array) else d for lt, d in zip(leaves, douts)])
        ret = f"({_tree_expr(rt, it_v)}, {_tree_expr(rt, it_d)})"
    impl = g.names.fresh("jvp_in_njit")
    src = (f"def {impl}(f, primals, tangents=None, preopt=True, cache=None, strong_zero=True):\n"
           + "".join(f"    {ln}\n" for ln in g.lines) + f"    return {ret}\n")
    return _exec(src, g.env, impl)


def _leaf_exprs(ty, expr: str, out: list) -> None:
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        for i, t in enumerate(ty.types):
            _leaf_exprs(t, f"{expr}[{i}]", out)
    else:
        out.append(expr)


def _tree_expr(ty, leaves) -> str:
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return "(" + "".join(_tree_expr(t, leaves) + ", " for t in ty.types) + ")"
    return next(leaves)


def _vjp_impl(f, *primals_and_options):
    from numba.core import types

    of = f" of {zn.function_label(_original(f.dispatcher))}" if isinstance(f, types.Dispatcher) else ""
    raise ZymaseError(f"vjp{of} is called inside njit code, where its pullback (a Python function it returns) "
                      "cannot live", construct="zymase.vjp(...) in njit code",
                      hint="inside njit code use zymase.grad(f) for a float result (its gradient is the pullback "
                      "of 1.0) or zymase.jvp; call zymase.vjp from Python for the pullback of an array result")


def register() -> None:
    """Make ``zymase.jvp`` and ``zymase.vjp`` typeable in njit code (once)."""
    from numba.extending import overload

    from numba.core.registry import cpu_target

    options = {"nopython": True, "no_cfunc_wrapper": True}
    overload(jvp, jit_options=options)(naming_the_call_site(_jvp_impl))
    overload(vjp, jit_options=options)(naming_the_call_site(_vjp_impl))
    # this may run while Numba types the first njit function that names zymase.jvp
    # (the module is imported on first use), after its typing context loaded the
    # registrations: load them now, or the name is an unknown attribute to it
    cpu_target.typing_context.refresh()
