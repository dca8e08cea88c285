"""Array arguments that share memory, refused where the function writes through them.

A derivative call gives every array argument a shadow of its own (``grad``) or runs the
function on a copy of each (``jvp``, ``vjp``, the Jacobians). Both are right when the
arguments are distinct memory, and also when they overlap but the function only reads
them (``k(X, X)``: each argument's partial derivative is well defined and the partials
add up). When the function writes through one of two overlapping arguments and reads
the other, the values it reads depend on the write, which separate shadows (or copies)
do not see: ``y[i] = x[i] * y[i]`` called as ``f(x, x)`` squares ``x``, and the derivative
came out as if ``x`` and ``y`` were two arrays (a silent wrong value, session 25). Such a
call is refused; whether the function writes is decided by Numba itself, typing it with
the overlapping arguments read-only (a write into a read-only array, or a view of one,
is a typing error), only for calls whose arguments overlap, per overlapping pair. In the
glue of njit code calling a transform (``grad``, ``hessian``, ``hvp`` objects, ``jvp``) the
overlap of every pair of arrays, tuples' elements included, is tested at run time
(``njit_overlap_checks``). ``autodiff``/``fwddiff`` take the shadows from the caller:
there two overlapping primals, or two overlapping shadows, are refused where the function
writes into them (``check_annotated_arguments``; a shadow overlapping a primal is refused
always, ``api._check_disjoint_shadows``).
"""

from __future__ import annotations

import functools

import numpy as np

from zymase.errors import ZymaseError

_writes: dict = {}  # (dispatcher, argument types, overlapping positions) -> write_site's answer


def check_aliased_arguments(disp, names, args, api: str) -> None:
    """Refuse ``api`` at ``args`` when two of its array arguments share memory and the
    function may write into one of them."""
    from zymase.api import _arrays, _label

    # (every call of a gradient from Python comes here: the arguments are named, and the
    # pairs tested again, only when two arrays overlap, which is rare)
    arrays = []
    for v in args:
        if isinstance(v, np.ndarray):
            arrays.append(v)
        elif isinstance(v, tuple):
            arrays += [a for a, _ in _arrays(v, "")]
    if not any(np.may_share_memory(a, b) for k, a in enumerate(arrays) for b in arrays[k + 1:]):
        return
    leaves = [(a, what, i) for i, v in enumerate(args) for a, what in _arrays(v, _label(names, i))]
    _refuse_written_overlap(disp, args, leaves, functools.partial(message, api), _pass_once_hint(disp))


def check_annotated_arguments(disp, names, args, primal_values, api: str) -> None:
    """``autodiff``/``fwddiff`` at ``args`` (``Active``/``Duplicated``/``Const``
    wrappers, ``primal_values`` their values): refuse two overlapping primal arrays, or
    two overlapping shadows, where the function may write into them. A derivative built
    for separate arrays does not see a write through one in what is read through the
    other; and two shadows sharing memory mix the derivatives of arguments one of which
    is written (an output's shadow is read and zeroed by reverse mode)."""
    from zymase.api import Duplicated, _arrays, _label

    primals = [(a, what, i) for i, v in enumerate(primal_values) for a, what in _arrays(v, _label(names, i))]
    _refuse_written_overlap(disp, primal_values, primals, functools.partial(message, api), _pass_once_hint(disp))
    shadows = [(a, f"the shadow of {what}", i) for i, v in enumerate(args) if isinstance(v, Duplicated)
               for a, what in _arrays(v.dval, _label(names, i))]
    _refuse_written_overlap(disp, primal_values, shadows, _shadows_message,
                            "give every argument a shadow of its own, e.g. np.zeros_like(x)")


def _pass_once_hint(disp) -> str:
    return (f"pass the array once and let an njit wrapper pass it twice (g(x) returning {_bare(disp)}(x, x), "
            "then differentiate g), or pass a copy if the arrays are meant to be distinct")


def _shadows_message(fname: str, first: str, second: str) -> str:
    return (f"{first} and {second} share memory, and {fname} may write into these arguments; their "
            "derivatives would be mixed in one array")


def _bare(disp) -> str:
    from zymase.frontends import numba as zn

    return zn.function_label(disp).strip("'")


def _refuse_written_overlap(disp, values, leaves, text, hint: str) -> None:
    """Raise for the first pair of ``leaves`` ((array, name, argument position)) that
    share memory where ``disp``'s function may write into their arguments; ``text(f,
    first, second)`` says what is wrong."""
    import numba

    from zymase.frontends import numba as zn

    argtys = None
    for k, (a, first, i) in enumerate(leaves):
        for b, second, j in leaves[k + 1:]:
            if not np.may_share_memory(a, b):
                continue
            if argtys is None:
                argtys = tuple(numba.typeof(v) for v in values)
            written = write_site(disp, argtys, tuple(sorted({i, j})))
            if written is not None:
                fname = zn.function_label(disp)
                raise ZymaseError(text(fname, first, second), function=_bare(disp), location=written or None,
                                  hint=hint)


def _read_only_type(t):
    from numba.core import types

    if isinstance(t, types.Array):
        return t.copy(readonly=True)
    if isinstance(t, types.UniTuple):
        return types.UniTuple(_read_only_type(t.dtype), t.count)
    if isinstance(t, types.Tuple):
        return types.Tuple([_read_only_type(e) for e in t.types])
    return t


def write_site(disp, argtys: tuple, positions: tuple) -> str | None:
    """None when Numba types ``disp``'s function with the arguments at ``positions``
    read-only (their arrays and tuples of arrays); otherwise where it refuses (a write
    into a read-only array), ``file:line``, or "" when Numba gives no location."""
    from numba.core import compiler, errors, typed_passes
    from numba.core.registry import cpu_target

    argtys = tuple(_read_only_type(t) if i in positions else t for i, t in enumerate(argtys))
    key = (disp, argtys, positions)
    if key not in _writes:
        try:
            func_ir = compiler.run_frontend(disp.py_func)
            typed_passes.type_inference_stage(cpu_target.typing_context, cpu_target.target_context,
                                              func_ir, argtys, None)
            _writes[key] = None
        except Exception as exc:  # a write into a read-only array (or anything else Numba refuses)
            loc = getattr(exc, "loc", None) if isinstance(exc, errors.NumbaError) else None
            _writes[key] = f"{loc.filename}:{loc.line}" if loc is not None and loc.line else ""
    return _writes[key]


def message(api: str, fname: str, first: str, second: str) -> str:
    return (f"{api} of {fname}: {first} and {second} share memory, and {fname} may write into them; "
            "its derivative would take them as separate arrays (the writes through one change "
            "what is read through the other)")


def njit_overlap_checks(disp, names, argtys, api: str, overlap_name: str,
                        error_name: str, exprs=None) -> tuple[list[str], dict]:
    """Lines (unindented) for the glue of njit code calling ``api`` of ``disp`` (a
    transform called from njit code; ``exprs``: the glue's expression of each argument,
    its parameters by default): raise a ZymaseError when two arrays among the arguments
    (tuples' elements too) overlap at run time and the function may write into their
    arguments (decided here, at typing, per pair of arguments); and their environment."""
    from zymase.api import _label
    from zymase.frontends import numba as zn

    exprs = list(names) if exprs is None else exprs
    leaves = [(e, what, i) for i, t in enumerate(argtys)
              for e, what in _array_leaves(t, exprs[i], _label(names, i))]
    # one typing with every array read-only usually settles it (f writes none of them)
    if len(leaves) < 2 or write_site(disp, tuple(argtys), tuple(sorted({i for _, _, i in leaves}))) is None:
        return [], {}
    fname = zn.function_label(disp)
    lines = []
    for k, (x, first, i) in enumerate(leaves):
        for y, second, j in leaves[k + 1:]:
            written = write_site(disp, tuple(argtys), tuple(sorted({i, j})))
            if written is None:
                continue
            where = f"{written}: " if written else ""
            # one string argument (what njit code can raise); ZymaseError.format adds the prefix
            text = (f"{where}{message(api, fname, first, second)}; hint: pass "
                    "the array once and let an njit wrapper pass it twice, or pass a copy")
            lines.append(f"if {overlap_name}({x}, {y}):")
            lines.append(f"    raise {error_name}({text!r})")
    if not lines:
        return [], {}
    return lines, {overlap_name: _overlap_fn(), error_name: ZymaseError}


def _array_leaves(ty, expr: str, what: str):
    """(expression, name) of each array in a value of Numba type ``ty`` (tuples walked)."""
    from numba.core import types

    if isinstance(ty, types.Array):
        yield expr, what
    elif isinstance(ty, types.BaseTuple):
        for k, t in enumerate(ty.types):
            yield from _array_leaves(t, f"{expr}[{k}]", f"{what}[{k}]")


def _overlap_impl(a, b):
    # the bytes between each array's first and last element meet, whatever the strides
    # (jvp inside njit code takes views with steps, even negative ones)
    if a.size == 0 or b.size == 0:
        return False
    la = ha = a.ctypes.data
    for k in range(a.ndim):
        extent = (a.shape[k] - 1) * a.strides[k]
        la, ha = (la + extent, ha) if extent < 0 else (la, ha + extent)
    lb = hb = b.ctypes.data
    for k in range(b.ndim):
        extent = (b.shape[k] - 1) * b.strides[k]
        lb, hb = (lb + extent, hb) if extent < 0 else (lb, hb + extent)
    return la < hb + b.itemsize and lb < ha + a.itemsize


_overlap = None


def _overlap_fn():
    global _overlap
    if _overlap is None:
        import numba

        _overlap = numba.njit(no_cfunc_wrapper=True)(_overlap_impl)
    return _overlap
