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
is a typing error), only for calls whose arguments overlap. In the glue of njit code
calling a ``grad`` object the overlap is tested at run time (``njit_overlap_checks``).
"""

from __future__ import annotations

import numpy as np

from zymase.errors import ZymaseError

_writes: dict = {}  # (dispatcher, argument types, overlapping positions) -> write_site's answer


def check_aliased_arguments(disp, names, args, api: str) -> None:
    """Refuse ``api`` at ``args`` when two of its array arguments share memory and the
    function may write into one of them."""
    import numba

    from zymase.api import _arrays, _label
    from zymase.frontends import numba as zn

    leaves = [(a, what, i) for i, v in enumerate(args) for a, what in _arrays(v, _label(names, i))]
    if len(leaves) < 2:
        return
    pairs = [(p, q) for k, p in enumerate(leaves) for q in leaves[k + 1:] if np.may_share_memory(p[0], q[0])]
    if not pairs:
        return
    positions = tuple(sorted({p[2] for pair in pairs for p in pair}))
    written = write_site(disp, tuple(numba.typeof(v) for v in args), positions)
    if written is None:
        return
    (_, first, _), (_, second, _) = pairs[0]
    fname = zn.function_label(disp)
    raise ZymaseError(
        message(api, fname, first, second),
        function=fname.strip("'"),
        location=written or None,
        hint=f"pass the array once and let an njit wrapper pass it twice (g(x) returning {fname.strip(chr(39))}(x, x), "
        "then differentiate g), or pass a copy if the arrays are meant to be distinct",
    )


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
                        error_name: str) -> tuple[list[str], dict]:
    """Lines for the glue of njit code calling ``api`` of ``disp`` (a ``grad`` object called
    from njit code): raise a ZymaseError when two array arguments overlap at run time and
    the function may write into them (decided here, at typing); and their environment."""
    from numba.core import types

    from zymase.api import _label
    from zymase.frontends import numba as zn

    arrays = [i for i, t in enumerate(argtys) if isinstance(t, types.Array)]
    if len(arrays) < 2:
        return [], {}
    written = write_site(disp, tuple(argtys), tuple(arrays))
    if written is None:
        return [], {}
    fname = zn.function_label(disp)
    lines = []
    for k, i in enumerate(arrays):
        for j in arrays[k + 1:]:
            where = f"{written}: " if written else ""
            # one string argument (what njit code can raise); ZymaseError.format adds the prefix
            text = (f"{where}{message(api, fname, _label(names, i), _label(names, j))}; hint: pass "
                    "the array once and let an njit wrapper pass it twice, or pass a copy")
            lines.append(f"    if {overlap_name}({names[i]}, {names[j]}):")
            lines.append(f"        raise {error_name}({text!r})")
    return lines, {overlap_name: _overlap_fn(), error_name: ZymaseError}


def _overlap_impl(a, b):
    # contiguous arrays (the only kind a transform takes): their byte ranges meet
    pa, pb = a.ctypes.data, b.ctypes.data
    return a.size > 0 and b.size > 0 and pa < pb + b.nbytes and pb < pa + a.nbytes


_overlap = None


def _overlap_fn():
    global _overlap
    if _overlap is None:
        import numba

        _overlap = numba.njit(no_cfunc_wrapper=True)(_overlap_impl)
    return _overlap
