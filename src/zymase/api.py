"""Python API: derivatives of ``@numba.njit`` functions.

JAX-style: :func:`grad`, :func:`value_and_grad` here; :func:`jvp`, :func:`vjp`,
:func:`jacfwd`, :func:`jacrev`, :func:`jacobian` in :mod:`zymase.api_outputs`;
:func:`hessian`, :func:`hvp` and ``grad(grad(f))`` in :mod:`zymase.api_second_order`;
:func:`laplacian` in :mod:`zymase.api_laplacian`.
Enzyme-style: :func:`autodiff` (reverse) and :func:`fwddiff` (forward) with the
argument wrappers :class:`Active`, :class:`Duplicated`, :class:`DuplicatedNoNeed` and
:class:`Const`.

``grad``/``value_and_grad`` return objects that Numba can call from njit code (their
Numba type is the njit trampoline that calls the compiled kernel), so a gradient-descent
loop written in njit calls the gradient without going through Python; njit code that
calls one is differentiable in turn (the kernel's source is linked in:
``frontends/numba.with_called_kernels``).

Arguments may be float scalars, integers (always constant), contiguous float32/float64
arrays of any rank, and tuples of these. Semantics follow Enzyme: the function runs
(with its side effects on arrays) once per derivative call; a reverse-mode call adds
into the shadows of duplicated arrays; ``grad`` gives the derivative with respect to
each argument's value on entry.
"""

from __future__ import annotations

import collections
import inspect
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from zymase.api_aliasing import check_aliased_arguments, check_annotated_arguments, njit_overlap_checks
from zymase.errors import ZymaseError
from zymase.frontends import numba as zn
from zymase.njit_call_site import naming_the_call_site

__all__ = [
    "Active", "Const", "Duplicated", "DuplicatedNoNeed",
    "autodiff", "fwddiff", "grad", "value_and_grad", "jvp", "vjp", "stats",
    "jacfwd", "jacrev", "jacobian", "hessian", "hvp", "laplacian",
]


# --------------------------------------------------------------------------------------
# Enzyme-style argument wrappers
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Active:
    """A float scalar whose derivative reverse mode returns."""

    val: Any


@dataclass(frozen=True)
class Const:
    """An argument that is not differentiated."""

    val: Any


@dataclass(frozen=True)
class Duplicated:
    """An array (or, in forward mode, a float) with its shadow: reverse mode adds the
    derivative into the shadow; forward mode reads the tangent from it."""

    val: Any
    dval: Any


@dataclass(frozen=True)
class DuplicatedNoNeed(Duplicated):
    """Like :class:`Duplicated`; the primal array's final contents are not needed."""


def stats():
    """Every kernel compiled in this process (phases in seconds, disk-cache hits).
    Set ``ZYMASE_DEBUG=1`` to print each compilation as it happens."""
    return zn.stats()


# --------------------------------------------------------------------------------------
# Types and checks
# --------------------------------------------------------------------------------------


def _label(names, i: int) -> str:
    """How messages name positional argument ``i``: its index and Python name."""
    return f"argument {i} ('{names[i]}')" if i < len(names) else f"argument {i}"


def _typeof(value, what: str):
    import numba

    try:
        ty = numba.typeof(value)
    except Exception:
        raise ZymaseError(f"{what} has type {type(value).__name__}, which Numba cannot pass to njit code",
                          hint="pass float scalars, integers, NumPy arrays or tuples of these") from None
    _check_type(ty, f"{what} (a {type(value).__name__})" if not isinstance(value, (np.ndarray, tuple)) else what)
    return ty


def _quick_type_key(value):
    """A key that decides ``numba.typeof(value)`` for the values a transform is usually
    called with from Python (floats, bools, ints in int64's range, NumPy scalars, NumPy
    arrays and tuples of these), made without asking Numba; None for any other value.
    Numba types an array by its dtype, rank, C and F contiguity (its layout) and
    writeability only (``numba.core.typing.typeof._typeof_ndarray``), a scalar by its
    Python or NumPy type. A call whose arguments all have keys seen before skips
    Numba's typeof and zymase's checks of the types (issue 29: about half of a small
    gradient's call from Python)."""
    t = type(value)
    if t is float or t is bool or (t is int and -(2**63) <= value < 2**63):
        return t
    if t is np.ndarray and value.dtype.kind in "fiub":  # (not records: their alignment is not in ==)
        flags = value.flags
        return value.dtype, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable
    if t is tuple:
        keys = tuple(_quick_type_key(v) for v in value)
        return None if any(k is None for k in keys) else (tuple, keys)
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        return t
    return None


def _check_type(ty, what: str) -> None:
    from numba.core import types

    if isinstance(ty, types.Array):
        if not isinstance(ty.dtype, types.Float):
            # integers and records (structured dtypes) are constant data
            if isinstance(ty.dtype, (types.Integer, types.Boolean, types.Record)):
                return
            raise ZymaseError(f"{what} is an array of {ty.dtype}", hint="use float32 or float64 arrays")
        if ty.layout != "C":
            # (the argument's own name in the hint: what is "argument 0 ('A')[1]" for a tuple's element)
            named = re.search(r"\('(\w+)'\)((?:\[\d+\])*)", what)
            arg = f"{named.group(1)}{named.group(2)}" if named else "x"
            raise ZymaseError(f"{what} is a non-contiguous array ({ty})",
                              hint=f"pass np.ascontiguousarray({arg}) (Fortran-ordered and strided arrays are "
                              "not differentiated in place)")
        return
    if isinstance(ty, types.BaseTuple):
        for i, t in enumerate(ty.types):
            _check_type(t, f"{what}[{i}]")
        return
    if isinstance(ty, (types.Float, types.Integer, types.Boolean, types.Record, types.Dispatcher)):
        return
    if isinstance(ty, (types.ClassInstanceType, types.StructRef)):
        # (its fields may hold the very arrays being differentiated, which the argument
        # checks and shadows cannot see: not even taken as a constant)
        kind = "jitclass" if isinstance(ty, types.ClassInstanceType) else "structref"
        raise ZymaseError(f"{what} is a {kind} instance, which zymase does not "
                          "take as an argument of a differentiated function",
                          hint="pass its fields instead (float scalars, integers, contiguous arrays, or a tuple or "
                          "namedtuple of these) and build the instance inside the function if it holds only "
                          "constants")
    raise ZymaseError(f"{what} has Numba type {ty}, which zymase cannot differentiate through",
                      hint="pass float scalars, integers, contiguous arrays or tuples of these")


def _is_float_array(ty) -> bool:
    from numba.core import types

    return isinstance(ty, types.Array) and isinstance(ty.dtype, types.Float)


def _grad_activity(ty, what: str):
    """Reverse-mode activity of a differentiated argument: floats active, float arrays
    duplicated, tuples per element; integers are an error."""
    from numba.core import types

    if isinstance(ty, types.Float):
        return zn.ACTIVE
    if _is_float_array(ty):
        return zn.DUP
    if isinstance(ty, types.BaseTuple):
        return tuple(_grad_activity(t, f"{what}[{i}]") for i, t in enumerate(ty.types))
    raise ZymaseError(f"cannot differentiate with respect to {what}, which has type {ty}",
                      hint="differentiate with respect to float scalars or float arrays; integers are constant")


def _tangent_activity(ty):
    """Forward-mode activity: floats and float arrays carry tangents."""
    from numba.core import types

    if isinstance(ty, types.Float) or _is_float_array(ty):
        return zn.DUP
    if isinstance(ty, types.BaseTuple):
        return tuple(_tangent_activity(t) for t in ty.types)
    return zn.CONST


def _const_activity(ty):
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return tuple(_const_activity(t) for t in ty.types)
    return zn.CONST


def _check_result(disp, argtypes, *, need_float: bool, api: str):
    """Type ``disp`` at ``argtypes`` (the user's dispatcher, as calling it would) and
    check its result. A result that is not a float because integers came in names
    the integer arguments."""
    from numba.core import types

    rt = zn.numba_ir(disp, tuple(argtypes)).restype
    names = _param_names(disp)
    ints = [_label(names, i) for i, t in enumerate(argtypes) if _has_integer_leaf(t)]
    because = f" ({', '.join(ints)} {'is' if len(ints) == 1 else 'are'} integer)" if ints else ""
    if need_float and not isinstance(rt, types.Float):
        if hasattr(disp.py_func, "zymase_composes"):  # grad(grad(f)) of an array gradient, ...
            raise ZymaseError(f"{api} of {zn.function_label(disp)} needs it to return a float, but it returns {rt}",
                              hint="for derivatives of an array-valued derivative use zymase.jacfwd, "
                              "zymase.jacrev, zymase.jvp or zymase.vjp of it (zymase.hessian(f) is the Jacobian "
                              "of grad(f))")
        raise ZymaseError(f"{api} needs {zn.function_label(disp)} to return a float, but it returns {rt}{because}",
                          hint="pass float arrays and scalars (x.astype(np.float64)) where values are "
                          "differentiated; return a float scalar (e.g. a loss); for vector outputs use vjp or "
                          "autodiff with Duplicated output arrays")
    if not isinstance(rt, (types.Float, types.NoneType)):
        raise ZymaseError(f"{zn.function_label(disp)} returns {rt}{because}; zymase differentiates functions "
                          "returning a float or nothing",
                          hint="return a float, or write results into an argument array")
    return rt


def _has_integer_leaf(ty) -> bool:
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return any(_has_integer_leaf(t) for t in ty.types)
    if isinstance(ty, types.Array):
        ty = ty.dtype
    return isinstance(ty, (types.Integer, types.Boolean))


def _is_real_number(v) -> bool:
    """A Python/NumPy real number (or 0-d real array): what a scalar's tangent or
    cotangent may be. Booleans are not numbers here."""
    if isinstance(v, (bool, np.bool_)):
        return False
    if isinstance(v, np.ndarray):
        return v.ndim == 0 and v.dtype.kind in "iuf"
    return isinstance(v, (int, float, np.integer, np.floating))


def _arity_error(disp, names, given: int, hint: str) -> ZymaseError:
    required = len(names) - len(disp.py_func.__defaults__ or ())
    missing = names[given:required]
    which = (f": {', '.join(repr(n) for n in missing)} {'is' if len(missing) == 1 else 'are'} missing" if missing
             else f" (parameters {', '.join(repr(n) for n in names)})")
    return ZymaseError(f"{zn.function_label(disp)} takes {len(names)} arguments, got {given}{which}", hint=hint)


def _argnums(argnums, nargs: int) -> tuple[int, ...]:
    hint = "'argnums' is an int or a tuple of ints counting positional arguments from 0"
    if isinstance(argnums, (int, np.integer)) and not isinstance(argnums, (bool, np.bool_)):
        nums = (int(argnums),)
    elif isinstance(argnums, (tuple, list)) and argnums:
        nums = tuple(argnums)
    else:
        raise ZymaseError(f"argnums {argnums!r} is not an int or a tuple of ints", hint=hint)
    for n in nums:
        if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)):
            raise ZymaseError(f"argnums {argnums!r} holds {n!r}, which is not an int", hint=hint)
        if not -nargs <= n < nargs:
            raise ZymaseError(f"argnums {argnums!r} is out of range for a function of {nargs} arguments", hint=hint)
    return tuple(int(n) % nargs for n in nums)


def _with_defaults(disp, names, args: tuple, hint: str) -> tuple:
    """``args`` completed with the defaults of the trailing parameters left out (as
    Numba completes a call); too few arguments for the parameters without defaults is
    an error naming them."""
    defaults = disp.py_func.__defaults__ or ()
    first_default = len(names) - len(defaults)
    if len(args) >= len(names):
        return args
    if len(args) < first_default:
        raise _arity_error(disp, names, len(args), hint)
    return args + tuple(defaults[len(args) - first_default:])


def _param_names(disp) -> list[str]:
    import inspect

    sig = inspect.signature(disp.py_func)
    names = []
    for p in sig.parameters.values():
        if p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            raise ZymaseError(f"{zn.function_label(disp)} has a *args/**kwargs/keyword-only parameter '{p.name}'",
                              hint="differentiate a function with positional parameters only")
        names.append(p.name)
    return names


# --------------------------------------------------------------------------------------
# Calling a kernel from njit code
# --------------------------------------------------------------------------------------


def _kernel_intrinsic(kernel: zn.Kernel):
    """An intrinsic that calls ``kernel`` with a tuple of its arguments, in Numba's
    calling convention, and propagates the primal's exceptions."""
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def call_kernel(typingctx, args):
        sig = kernel.restype(args)

        def codegen(context, builder, signature, llargs):
            argtys = list(signature.args[0].types)
            vals = cgutils.unpack_tuple(builder, llargs[0], len(argtys))
            fnty = context.call_conv.get_function_type(kernel.restype, list(kernel.argtypes))
            fn = cgutils.get_or_insert_function(builder.module, fnty, kernel.symbol)
            status, out = context.call_conv.call_function(builder, fn, kernel.restype, argtys, vals)
            with cgutils.if_unlikely(builder, status.is_error):
                context.call_conv.return_status_propagate(builder, status)
            return out

        return sig, codegen

    return call_kernel


#: The last Python sources generated as glue (tests collect their identifiers to try
#: each as a user parameter name).
glue_sources: collections.deque = collections.deque(maxlen=32)


def _exec(src: str, env: dict, name: str):
    glue_sources.append(src)
    code = compile(src, f"<zymase {name}>", "exec")
    ns: dict = {}
    exec(code, env, ns)
    return ns[name]


class _Names:
    """Names for generated glue that cannot collide with the user's parameter names
    (the glue's functions take the user's parameters by name, so every other name in
    them must differ): ``fresh("s0")`` is ``s0``, or ``s0_``, ``s0__``... when taken."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name = base
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name


class _Plan:
    """How one (function, argument types, activities) call is assembled in njit code:
    the kernel's argument list, and what is returned from the kernel's tuple."""

    def __init__(self, disp, argtypes, activities, mode, options, *, promote: bool = False,
                 inner: zn.KernelSpec | None = None, width: int = 1, laplacian: bool = False):
        self.disp, self.argtypes, self.mode = disp, argtypes, mode
        spec = zn.KernelSpec(mode, activities, preopt=options.get("preopt", True),
                             strong_zero=options.get("strong_zero", True), inner=inner, width=width,
                             laplacian=laplacian,
                             tape_limit=options.get("tape_limit"))
        self.kernel = zn.get_kernel(disp, argtypes, spec, cache=options.get("cache", False), promote=promote)
        self.activities = self.kernel.spec.activities
        self.call = _kernel_intrinsic(self.kernel)


def _copy_expr(ty, expr: str) -> str:
    """njit source copying ``expr`` of type ``ty``: arrays copied, tuples per element."""
    from numba.core import types

    if isinstance(ty, types.Array):
        return f"{expr}.copy()"
    if isinstance(ty, types.BaseTuple):
        return "(" + "".join(_copy_expr(t, f"{expr}[{i}]") + ", " for i, t in enumerate(ty.types)) + ")"
    return expr


def _shadow_expr(ty, expr: str, np_name: str) -> str:
    """njit source that makes a zero shadow for a value of type ``ty`` (NumPy is
    ``np_name`` in the glue)."""
    from numba.core import types

    if _is_float_array(ty):
        return f"{np_name}.zeros_like({expr})"
    if isinstance(ty, types.BaseTuple):
        parts = [_shadow_expr(t, f"{expr}[{i}]", np_name) for i, t in enumerate(ty.types)]
        return "(" + "".join(p + ", " for p in parts) + ")"
    return expr


def _result_expr(ty, act, shadow: str, outs, result: str) -> str:
    """njit source for the derivative of an argument: shadows for arrays, the kernel's
    outputs (``result[next(outs)]`` in order) for active floats."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        parts = [_result_expr(t, a, f"{shadow}[{i}]", outs, result) for i, (t, a) in enumerate(zip(ty.types, act))]
        return "(" + "".join(p + ", " for p in parts) + ")"
    if act == zn.ACTIVE:
        return f"{result}[{next(outs)}]"
    return shadow


def _result_slots(argtypes, activities) -> list:
    """Per argument, an iterator over the places of its ``active`` leaves in the
    kernel's result tuple (the value at 0, then the active leaves in argument order,
    whatever order ``argnums`` asks them in)."""
    return [iter(places) for places in _result_places(argtypes, activities)]


def _result_places(argtypes, activities) -> list[range]:
    """:func:`_result_slots` as ranges (kept per argument types for calls from Python)."""
    places, start = [], 1
    for ty, act in zip(argtypes, activities):
        n = len(zn.active_leaves(ty, act))
        places.append(range(start, start + n))
        start += n
    return places



def _njit_entry(disp, params: list, defaults: tuple, api: str, typer):
    """The njit function a transform's Numba type names (its trampoline): it takes
    ``params`` (the trailing ones with ``defaults``) and calls an ``@overload`` whose
    implementation ``typer(*argument types)`` generates, so njit code calls the
    transform like an njit function and each argument-type signature gets its own glue."""
    import numba
    from numba.extending import overload

    joined = ", ".join(params)
    glue = _Names(params)
    stub_n, typer_n, ol_n = glue.fresh("stub"), glue.fresh("typer"), glue.fresh("ol")
    stub = _exec(f"def {stub_n}({joined}):\n    raise NotImplementedError\n", {}, stub_n)
    # overload's typer must take the parameters by name
    # its errors name the user's njit function that calls the transform, and the line
    ol = _exec(f"def {ol_n}({joined}):\n    return {typer_n}({joined})\n", {typer_n: naming_the_call_site(typer)}, ol_n)
    # the implementation is called from njit code only: no C-callable wrapper to build
    overload(stub, jit_options={"nopython": True, "no_cfunc_wrapper": True})(ol)
    # a Python identifier even for a lambda ("<lambda>") or a non-ASCII name
    name = glue.fresh(f"{api}_" + "".join(c if c.isalnum() and c.isascii() or c == "_" else "_"
                                          for c in disp.py_func.__name__))
    # the trampoline keeps the function's defaults: njit code may leave them out too
    env = {stub_n: stub}
    sig = list(params)
    for k, value in enumerate(defaults):
        i = len(sig) - len(defaults) + k
        env[glue.fresh(f"default_{params[i]}")] = value
        sig[i] += f"={list(env)[-1]}"
    tramp = _exec(f"def {name}({', '.join(sig)}):\n    return {stub_n}({joined})\n", env, name)
    entry = numba.njit(tramp)
    _checking_arity(entry, inspect.signature(tramp), api, zn.function_label(disp))
    return entry


def _checking_arity(entry, pysig, api: str, fname: str) -> None:
    """A call from njit code whose arguments do not bind to ``entry``'s fixed signature is
    refused with a ZymaseError naming the transform, the counts and the call site:
    Numba's own binding error (a TypingError with its traceback) names only the
    generated trampoline. The check runs where Numba asks the dispatcher for its call
    template, before any binding."""
    from zymase.njit_call_site import call_site

    template = entry.get_call_template

    def get_call_template(args, kws):
        try:
            pysig.bind(*args, **kws)
        except TypeError as exc:
            function, location = call_site()
            given = f"{len(args)} argument{'s' if len(args) != 1 else ''}"
            if kws:
                given += f" and keyword{'s' if len(kws) > 1 else ''} {', '.join(repr(k) for k in kws)}"
            params = len(pysig.parameters)
            raise ZymaseError(f"{api} of {fname} takes {params} argument{'s' if params != 1 else ''} {pysig}, got "
                              f"{given} in njit code ({exc})", construct=f"{api}(...) in njit code",
                              function=function, location=location,
                              hint=f"pass the arguments {pysig} by position, as from Python") from None
        return template(args, kws)

    entry.get_call_template = get_call_template  # the instance's: only this trampoline checks


class Transformed:
    """``grad(f)`` / ``value_and_grad(f)``: callable from Python and from njit code."""

    def __init__(self, disp, argnums, *, with_value: bool, options: dict):
        self.disp = disp
        self.names = _param_names(disp)
        # what njit code passes (api_second_order.composed calls a transform with them)
        self.params, self.defaults = self.names, disp.py_func.__defaults__ or ()
        self.argnums = _argnums(argnums, len(self.names))
        self.single = isinstance(argnums, int)
        self.with_value = with_value
        self.options = options
        self._plans: dict = {}
        self._callers: dict = {}  # argument types -> njit function calling the kernel from Python
        # the arguments' quick type keys -> what a call from Python with such arguments
        # needs that does not depend on their values (_PythonCall)
        self._python_calls: dict = {}
        api = "value_and_grad" if with_value else "grad"
        self.api = api
        me = self

        def typer(*argtys):
            return me._impl(argtys)

        self.trampoline = _njit_entry(disp, self.params, self.defaults, api, typer)
        # (the disk cache key of a function given this transform as an argument covers it)
        self.trampoline.zymase_transform = self

    @property
    def _numba_type_(self):
        from numba.core import types

        return types.Dispatcher(self.trampoline)

    def _check(self, argtys):
        if len(argtys) != len(self.names):
            raise _arity_error(self.disp, self.names, len(argtys), "pass every positional argument")
        for i, t in enumerate(argtys):
            _check_type(t, _label(self.names, i))
        acts = []
        for i, t in enumerate(argtys):
            if i in self.argnums:
                acts.append(_grad_activity(t, _label(self.names, i)))
            else:
                acts.append(_const_activity(t))
        # after the activities: an integer array where a float one is differentiated is
        # named as such, not as a function returning an integer
        _check_result(self.disp, tuple(argtys), need_float=True, api=self.api)
        return tuple(acts)

    def plan(self, argtys) -> _Plan:
        argtys = tuple(argtys)
        p = self._plans.get(argtys)
        if p is None:
            acts = self._check(argtys)
            # arrays outside argnums that receive differentiated data get throwaway shadows
            p = _Plan(self.disp, argtys, acts, "rev", self.options, promote=True)
            self._plans[argtys] = p
        return p

    def _impl(self, argtys):
        from numba.core import types

        argtys = tuple(t.literal_type if isinstance(t, types.Literal) else t for t in argtys)
        p = self.plan(argtys)
        glue = _Names(self.names)
        np_n, call_n, seed_n, r, impl_n = (glue.fresh(b) for b in ("np", "call", "seed_t", "r", "impl"))
        # arrays that overlap at run time where f writes (njit_overlap_checks): refused
        checks, env = njit_overlap_checks(self.disp, self.names, argtys, self.api, glue.fresh("overlap"),
                                          glue.fresh("error"))
        lines = ["    " + ln for ln in checks]
        kargs, shadows = [], {}
        for i, (t, a) in enumerate(zip(argtys, p.activities)):
            kargs.append(self.names[i])
            if zn.has_shadow(a):
                shadows[i] = glue.fresh(f"s{i}")
                lines.append(f"    {shadows[i]} = {_shadow_expr(t, self.names[i], np_n)}")
                kargs.append(shadows[i])
        seed_t = p.kernel.argtypes[-1]
        kargs.append(f"{seed_n}(1.0)")
        lines.append(f"    {r} = {call_n}(({', '.join(kargs)},))")
        slots = _result_slots(argtys, p.activities)
        grads = [_result_expr(argtys[i], p.activities[i], shadows.get(i, ""), slots[i], r) for i in self.argnums]
        g = grads[0] if self.single else "(" + "".join(x + ", " for x in grads) + ")"
        ret = f"({r}[0], {g})" if self.with_value else g
        src = f"def {impl_n}({', '.join(self.names)}):\n" + "\n".join(lines) + f"\n    return {ret}\n"
        return _exec(src, {np_n: np, call_n: p.call, seed_n: _np_dtype(seed_t), **env}, impl_n)

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise ZymaseError(f"{self.api} of {zn.function_label(self.disp)} takes positional arguments only, got "
                              f"keyword argument{'s' if len(kwargs) > 1 else ''} "
                              f"{', '.join(repr(k) for k in kwargs)}",
                              hint="pass every argument by position")
        args = _with_defaults(self.disp, self.names, args, "pass every positional argument")
        key = tuple(_quick_type_key(a) for a in args)
        ready = self._python_calls.get(key)
        if ready is None:
            argtys = tuple(_typeof(a, _label(self.names, i)) for i, a in enumerate(args))
        check_aliased_arguments(self.disp, self.names, args, self.api)
        if ready is None:
            ready = self._python_call(argtys)
            if not any(k is None for k in key):
                self._python_calls[key] = ready
        # From Python the kernel is called through its CPython entry point, with the
        # shadows made here with NumPy as the trampoline's glue makes them in njit code:
        # no Numba compile on the first call, where the trampoline (what njit code
        # calls) costs three, its overload and their implementation with its np.zeros_like
        argtys, activities = ready.argtys, ready.activities
        kargs, shadows = [], {}
        for i, (v, t, a) in enumerate(zip(args, argtys, activities)):
            kargs.append(v)
            if ready.shadowed[i]:
                shadows[i] = _zero_shadow(v, t)
                kargs.append(shadows[i])
        kargs.append(ready.seed)
        r = ready.call(*kargs)
        slots = [iter(places) for places in ready.places]
        grads = [_result_value(argtys[i], activities[i], shadows.get(i), slots[i], r) for i in self.argnums]
        g = grads[0] if self.single else tuple(grads)
        return (r[0], g) if self.with_value else g

    def _python_call(self, argtys) -> _PythonCall:
        """What a call from Python at ``argtys`` needs besides the values: the plan (the
        kernel compiled), the kernel's entry point, which arguments get shadows, the
        places of their results and the seed."""
        p = self.plan(argtys)
        call = self._callers.get(argtys)
        if call is None:
            from zymase.collect_rarely import collecting_garbage_rarely
            from zymase.frontends.numba_entry import python_entry

            t0 = time.perf_counter()
            # the kernel's own CPython wrapper (its argument types are these values'),
            # not an njit function compiled to call it
            with collecting_garbage_rarely():
                call = self._callers[argtys] = python_entry(p.kernel, f"{self.api}_kernel_call")
            p.kernel.record.phases["caller"] = time.perf_counter() - t0
        return _PythonCall(argtys, p.activities, tuple(zn.has_shadow(a) for a in p.activities), call,
                           _result_places(argtys, p.activities), _np_dtype(p.kernel.argtypes[-1])(1.0))


@dataclass(frozen=True)
class _PythonCall:
    """A gradient's call from Python at one set of argument types, all but the values."""

    argtys: tuple
    activities: tuple
    shadowed: tuple  # per argument: whether the kernel takes a shadow after it
    call: Any  # the kernel's CPython entry point
    places: list  # per argument: the places of its active leaves in the kernel's results (ranges)
    seed: Any  # the seed of the result's adjoint (1.0 in the kernel's float type)


def _zero_shadow(value, ty):
    """The shadow ``_shadow_expr`` makes in njit code, made in Python: zeros for a float
    array, per element for a tuple, the value itself otherwise."""
    from numba.core import types

    if _is_float_array(ty):
        return np.zeros_like(value)
    if isinstance(ty, types.BaseTuple):
        return tuple(_zero_shadow(v, t) for v, t in zip(value, ty.types))
    return value


def _result_value(ty, act, shadow, outs, result):
    """What ``_result_expr`` returns in njit code, in Python: the derivative of an
    argument from its shadow and the kernel's results."""
    from numba.core import types

    if isinstance(ty, types.BaseTuple):
        return tuple(_result_value(t, a, None if shadow is None else shadow[i], outs, result)
                     for i, (t, a) in enumerate(zip(ty.types, act)))
    if act == zn.ACTIVE:
        return result[next(outs)]
    return shadow


def _np_dtype(ty):
    return np.dtype(str(ty)).type


def _options(f, preopt, cache, strong_zero, tape_limit=None):
    disp = zn.as_dispatcher(f)
    if cache is None:
        cache = bool(disp.targetoptions.get("cache", False))
    if tape_limit is not None:
        from zymase.autodiff.checkpoint import parse_size

        tape_limit = parse_size(str(tape_limit), what="tape_limit")
    return disp, {"preopt": bool(preopt), "cache": bool(cache), "strong_zero": bool(strong_zero),
                  "tape_limit": tape_limit}


def _is_transform(f) -> bool:
    """``api_second_order.is_transform(f)`` without importing that module (and
    api_outputs, api_in_njit: 135 KB of bytecode, issue 29) for a plain njit function:
    its other transforms exist only once it is imported."""
    if isinstance(f, Transformed):
        return True
    second_order = sys.modules.get("zymase.api_second_order")
    return second_order is not None and second_order.is_transform(f)


def grad(f, argnums=0, *, preopt: bool = True, cache: bool | None = None,
         strong_zero: bool = True, tape_limit: int | str | None = None) -> Transformed:
    """The gradient of a float-valued njit function with respect to argument(s)
    ``argnums`` (an int, or a tuple for a tuple of gradients), like ``jax.grad``.

    An array argument's gradient is an array of the same shape; a float's is a float.
    ``preopt=False`` differentiates before optimizing (Enzyme's baseline);
    ``cache=True`` keeps the compiled kernel on disk (default: the function's own
    ``cache`` option); ``strong_zero=False`` gives IEEE propagation (a zero adjoint
    times an infinite partial is NaN) instead of strong zeros (it is zero), here and in
    every other entry point. ``tape_limit`` (bytes, or a size such as ``"16M"``) bounds
    the reverse sweep's tape: time loops are then reversed by binomial checkpointing
    (zymase.autodiff.checkpoint), and a loop whose state cannot be bounded is refused.

    ``f`` may itself be a transform that returns a float: ``grad(grad(f))`` is the
    second derivative, reverse over reverse, ``grad(grad(grad(f)))`` the third
    (:mod:`zymase.api_second_order`)."""
    if _is_transform(f):
        from zymase import api_second_order

        return api_second_order.grad_of(f, argnums, False, preopt, cache, strong_zero, tape_limit)
    disp, opts = _options(f, preopt, cache, strong_zero, tape_limit)
    return Transformed(disp, argnums, with_value=False, options=opts)


def value_and_grad(f, argnums=0, *, preopt: bool = True, cache: bool | None = None,
         strong_zero: bool = True, tape_limit: int | str | None = None) -> Transformed:
    """Like :func:`grad`, returning ``(value, gradient)``."""
    if _is_transform(f):
        from zymase import api_second_order

        return api_second_order.grad_of(f, argnums, True, preopt, cache, strong_zero, tape_limit)
    disp, opts = _options(f, preopt, cache, strong_zero, tape_limit)
    return Transformed(disp, argnums, with_value=True, options=opts)


# --------------------------------------------------------------------------------------
# Kernels called directly from Python (Enzyme-style API, jvp, vjp)
# --------------------------------------------------------------------------------------

_direct_cache: dict = {}


def _direct(disp, argtypes, activities, mode, options, *, promote: bool = False,
            inner: zn.KernelSpec | None = None, width: int = 1, laplacian: bool = False):
    """A plan plus an njit function taking the kernel's arguments and returning its tuple
    (``promote``: see :func:`zymase.frontends.numba.get_kernel`; the plan's activities
    say which arguments need shadows; ``inner``: a nested request, ``width``: vector
    forward mode, ``laplacian``: Laplacian mode at that width, see
    :class:`zymase.frontends.numba.KernelSpec`)."""
    key = (disp, argtypes, activities, mode, tuple(sorted(options.items())), promote, inner, width, laplacian)
    hit = _direct_cache.get(key)
    if hit is not None:
        return hit
    plan = _Plan(disp, argtypes, activities, mode, options, promote=promote, inner=inner, width=width,
                 laplacian=laplacian)
    fn = _caller(plan)
    _direct_cache[key] = (plan, fn)
    return plan, fn


def _caller(plan: _Plan):
    """An njit function taking the kernel's arguments and returning its tuple, to call
    the kernel from Python (so without a C-callable wrapper: less to compile)."""
    import numba

    n = len(plan.kernel.argtypes)
    params = ", ".join(f"p{i}" for i in range(n))
    src = f"def kernel_call({params}):\n    return call(({params}{',' if n == 1 else ''}))\n"
    return numba.njit(no_cfunc_wrapper=True)(_exec(src, {"call": plan.call}, "kernel_call"))


def _check_shadow(x, dx, what: str) -> None:
    """``dx`` can be the shadow (or tangent) of ``x``: an array of the same shape and
    dtype, a tuple of such, a real number for a scalar."""
    if isinstance(x, np.ndarray):
        if not isinstance(dx, np.ndarray):
            raise ZymaseError(f"the shadow of {what} is {type(dx).__name__}, not an array",
                              hint="pass an array of the same shape and dtype, e.g. np.zeros_like(x)")
        if dx.shape != x.shape or dx.dtype != x.dtype:
            raise ZymaseError(
                f"the shadow of {what} has shape {dx.shape} and dtype {dx.dtype}, "
                f"but the array has shape {x.shape} and dtype {x.dtype}",
                hint="shadows must match their primal exactly: np.zeros_like(x)")
        if not dx.flags.c_contiguous or not dx.flags.writeable:
            raise ZymaseError(f"the shadow of {what} must be a writeable C-contiguous array",
                              hint="use np.zeros_like(x)")
    elif isinstance(x, tuple):
        if not isinstance(dx, tuple) or len(dx) != len(x):
            raise ZymaseError(f"the shadow of {what} must be a tuple of the same length",
                              hint="pass a tuple of shadows matching the tuple argument")
        for i, (a, b) in enumerate(zip(x, dx)):
            _check_shadow(a, b, f"{what}[{i}]")
    elif isinstance(dx, np.ndarray) and dx.ndim > 0:
        raise ZymaseError(f"the tangent of {what} is an array, but the argument is a scalar",
                          hint="pass a scalar tangent")
    elif not _is_real_number(dx):
        raise ZymaseError(f"the tangent of {what} is {type(dx).__name__} {_short(dx)}, not a real number",
                          hint="pass a float tangent")


def _is_zero(v) -> bool:
    """A numeric value (scalar, array or tuple of them) that is all zeros."""
    if isinstance(v, tuple):
        return all(_is_zero(x) for x in v)
    try:
        a = np.asarray(v)
        return a.dtype.kind in "iuf" and not np.any(a)
    except Exception:
        return False


def _short(v) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _arrays(v, what: str):
    """(array, name) for each array in an argument value (tuples walked)."""
    if isinstance(v, np.ndarray):
        yield v, what
    elif isinstance(v, tuple):
        for i, x in enumerate(v):
            yield from _arrays(x, f"{what}[{i}]")


def _check_disjoint_shadows(args, names, disp) -> None:
    """A shadow must not share memory with any primal array: the derivative code assumes
    it (Enzyme's contract), and a shadow that is also read as a primal would make the
    accumulated derivative feed back into the function's own values."""
    primals, shadows = [], []
    for i, a in enumerate(args):
        what = _label(names, i)
        if isinstance(a, Duplicated):
            primals += _arrays(a.val, what)
            shadows += _arrays(a.dval, f"the shadow of {what}")
        else:
            primals += _arrays(_unwrapped(a), what)
    for sh, sname in shadows:
        for pr, pname in primals:
            if np.may_share_memory(sh, pr):
                raise ZymaseError(f"{sname} shares memory with {pname}",
                                  function=zn.function_label(disp).strip("'"),
                                  hint="give every shadow memory of its own, e.g. np.zeros_like(x)")


def _unwrapped(a):
    """The primal value of an argument of ``autodiff``/``fwddiff``."""
    return a.val if isinstance(a, (Active, Duplicated, Const)) else a


def _with_shadow_type(dx, ty):
    """A scalar shadow converted to the primal's type (the kernel's argument types are
    the primal's)."""
    from numba.core import types

    if isinstance(ty, types.Float):
        return _np_dtype(ty)(dx)
    if isinstance(ty, types.BaseTuple):
        return tuple(_with_shadow_type(d, t) for d, t in zip(dx, ty.types))
    return dx


def autodiff(f, *args, preopt: bool = True, cache: bool | None = None,
         strong_zero: bool = True, tape_limit: int | str | None = None):
    """Reverse mode, Enzyme-style: ``autodiff(f, Active(x), Duplicated(a, da), Const(n))``.

    Seeds a float result with 1.0, adds derivatives into the shadows of ``Duplicated``
    arrays, and returns a tuple with one entry per argument: the derivative for an
    ``Active`` argument, ``None`` for the others. ``tape_limit`` as in :func:`grad`."""
    disp, opts = _options(f, preopt, cache, strong_zero, tape_limit)
    names = _param_names(disp)
    given = len(args)
    args = _with_defaults(disp, names, args, "pass every positional argument, wrapped in Active/Duplicated/Const")
    args = args[:given] + tuple(Const(d) for d in args[given:])
    if len(args) != len(names):
        raise _arity_error(disp, names, len(args), "pass every positional argument, wrapped in Active/Duplicated/Const")
    _check_disjoint_shadows(args, names, disp)
    prim, acts, kargs = [], [], []
    for i, a in enumerate(args):
        what = _label(names, i)
        if isinstance(a, Active):
            ty = _typeof(a.val, what)
            from numba.core import types

            if not isinstance(ty, types.Float):
                raise ZymaseError(f"Active({type(a.val).__name__}) on {what}: only float scalars can be Active",
                                  hint="wrap arrays as Duplicated(x, np.zeros_like(x))")
            prim.append(ty)
            acts.append(zn.ACTIVE)
            kargs.append(a.val)
        elif isinstance(a, Duplicated):
            ty = _typeof(a.val, what)
            if not (_is_float_array(ty) or (hasattr(ty, "types") and all(_is_float_array(t) for t in ty.types))):
                raise ZymaseError(f"{type(a).__name__} on {what} of type {ty}: in reverse mode only float arrays "
                                  "have shadows", hint="use Active(x) for a float scalar")
            _check_shadow(a.val, a.dval, what)
            prim.append(ty)
            act = zn.DUPNONEED if isinstance(a, DuplicatedNoNeed) else zn.DUP
            acts.append(act if not hasattr(ty, "types") else tuple(act for _ in ty.types))
            kargs += [a.val, a.dval]
        else:
            v = a.val if isinstance(a, Const) else a
            ty = _typeof(v, what)
            prim.append(ty)
            acts.append(_const_activity(ty))
            kargs.append(v)
    prim = tuple(prim)
    rt = _check_result(disp, prim, need_float=False, api="autodiff")
    check_annotated_arguments(disp, names, args, [_unwrapped(a) for a in args], "autodiff")
    from numba.core import types

    if isinstance(rt, types.Float):
        kargs.append(_np_dtype(rt)(1.0))
    plan, fn = _direct(disp, prim, tuple(acts), "rev", opts)
    r = fn(*kargs)
    outs = iter(r[1:])
    return tuple(next(outs) if act == zn.ACTIVE else None for act in acts)[:given]


def fwddiff(f, *args, preopt: bool = True, cache: bool | None = None,
         strong_zero: bool = True):
    """Forward mode, Enzyme-style: ``fwddiff(f, Duplicated(x, dx), Const(n))``.

    Returns the tangent of the float result (``None`` when ``f`` returns nothing);
    tangents of arrays ``f`` writes land in their shadows."""
    disp, opts = _options(f, preopt, cache, strong_zero)
    names = _param_names(disp)
    given = len(args)
    args = _with_defaults(disp, names, args, "pass every positional argument, wrapped in Duplicated/Const")
    args = args[:given] + tuple(Const(d) for d in args[given:])
    if len(args) != len(names):
        raise _arity_error(disp, names, len(args), "pass every positional argument, wrapped in Duplicated/Const")
    _check_disjoint_shadows(args, names, disp)
    prim, acts, kargs = [], [], []
    for i, a in enumerate(args):
        what = _label(names, i)
        if isinstance(a, Active):
            raise ZymaseError(f"Active on {what} in forward mode",
                              hint="forward mode takes Duplicated(x, dx): the tangent dx replaces Active")
        if isinstance(a, Duplicated):
            ty = _typeof(a.val, what)
            if not zn.has_shadow(_tangent_activity(ty)):
                raise ZymaseError(f"Duplicated on {what} of type {ty}: only floats and float arrays have tangents",
                                  hint="pass integers as Const(n)")
            _check_shadow(a.val, a.dval, what)
            prim.append(ty)
            acts.append(_tangent_activity(ty))
            kargs += [a.val, _with_shadow_type(a.dval, ty)]
        else:
            v = a.val if isinstance(a, Const) else a
            ty = _typeof(v, what)
            prim.append(ty)
            acts.append(_const_activity(ty))
            kargs.append(v)
    prim = tuple(prim)
    rt = _check_result(disp, prim, need_float=False, api="fwddiff")
    check_annotated_arguments(disp, names, args, [_unwrapped(a) for a in args], "fwddiff")
    plan, fn = _direct(disp, prim, tuple(acts), "fwd", opts)
    r = fn(*kargs)
    from numba.core import types

    return r[1] if isinstance(rt, types.Float) else None


def _copy(x):
    if isinstance(x, np.ndarray):
        return x.copy()
    if isinstance(x, tuple):
        return tuple(_copy(v) for v in x)
    return x


def _zeros(x):
    if isinstance(x, np.ndarray):
        return np.zeros_like(x)
    if isinstance(x, tuple):
        return tuple(_zeros(v) for v in x)
    return x


# the transforms beyond the first-order float case live in their own modules; they
# are part of this module's public surface (zymase.jvp is zymase.api.jvp). They are
# looked up on first use: those modules import this one, so importing them at the end
# of this module made ``import zymase.api_outputs`` (before zymase.api) a circular import.
_TRANSFORM_MODULES = {
    "jvp": "api_outputs", "vjp": "api_outputs", "jacfwd": "api_outputs", "jacrev": "api_outputs",
    "jacobian": "api_outputs", "hessian": "api_second_order", "hvp": "api_second_order",
    "laplacian": "api_laplacian",
}


def __getattr__(name: str):
    module = _TRANSFORM_MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'zymase.api' has no attribute '{name}'")
    import importlib

    value = getattr(importlib.import_module(f"zymase.{module}"), name)
    globals()[name] = value
    return value
