"""Numba front end, step 1: Numba's LLVM IR of an njit function before LLVM optimization.

zymase differentiates unoptimized IR (it runs its own pre-AD pipeline, without
vectorization and unrolling), but the user's dispatcher was compiled at Numba's -O3.
So the function and every njit function it reaches are recompiled as private
dispatchers (:func:`_private_copy`) with Numba's optimization at level 0
(:func:`_numba_unoptimized`); the user's dispatchers, closures and globals are never
touched. The copy is only a source of IR: it is compiled without Python or C-callable
wrappers and without machine code (:func:`_ir_only`). ``prange`` loops stay parfors in
it; ``serial=True`` gives a copy without ``parallel=True`` (the fallback of
transforms/numba_parfor.py). Their compiler (:mod:`zymase.frontends.numba_typing`)
lowers the typing of the user's compile of the same function and argument types instead
of typing the function again, where that is sound.
"""

from __future__ import annotations

import re
import threading
import time
import types as pytypes
from contextlib import contextmanager
from dataclasses import dataclass

from zymase.errors import ZymaseError
from zymase.frontends.numba_typing import copy_compiler

#: guards the caches of this module and of zymase.frontends.numba (compiling a kernel
#: compiles Numba IR under it)
_lock = threading.RLock()


def as_dispatcher(f, what: str = "the function"):
    """``f`` as a Numba dispatcher: an njit dispatcher as is, a plain Python function
    compiled with ``njit``; anything else (object mode included) is an error."""
    import numba
    from numba.core.registry import CPUDispatcher

    if isinstance(f, CPUDispatcher):
        opts = f.targetoptions
        if opts.get("forceobj") or opts.get("nopython") is False:
            raise ZymaseError(
                f"{function_label(f)} is compiled in object mode, which has no LLVM IR to differentiate",
                construct="@jit(forceobj=True)",
                hint="use @numba.njit (nopython mode)",
            )
        return f
    if isinstance(f, pytypes.FunctionType) and (f.__module__ or "").startswith("zymase."):
        # what jacfwd, laplacian, hessian(sparse=True) ... return: Python code calling kernels
        made = getattr(f, "zymase_transform", None) or f.__qualname__.split(".")[0].strip("_")
        raise ZymaseError(
            f"{made} is computed in Python from several derivative calls, so zymase cannot differentiate it "
            "again",
            construct=f"a transform of {made}",
            hint="transforms compose at any depth over grad, value_and_grad, hessian and hvp (e.g. "
            "zymase.jacfwd(zymase.hessian(f)) for third derivatives, zymase.grad(zymase.grad(f)))",
        )
    if isinstance(f, pytypes.FunctionType):
        return numba.njit(f)
    raise ZymaseError(
        f"{what} must be a @numba.njit function or a plain Python function, got {type(f).__name__}",
        hint="decorate it with @numba.njit",
    )


def function_label(d) -> str:
    """How messages name a dispatcher or Python function: its quoted qualified name."""
    py = getattr(d, "py_func", d)
    return f"'{getattr(py, '__qualname__', getattr(py, '__name__', '?'))}'"


def _dispatcher_refs(py) -> list[tuple[str, object, str]]:
    """The njit dispatchers a function refers to: (name, dispatcher, 'global'|'cell')."""
    from numba.core.registry import CPUDispatcher

    refs = []
    for name in py.__code__.co_names:
        v = py.__globals__.get(name)
        if isinstance(v, CPUDispatcher):
            refs.append((name, v, "global"))
    for name, cell in zip(py.__code__.co_freevars, py.__closure__ or ()):
        if _filled(cell) and isinstance(cell.cell_contents, CPUDispatcher):
            refs.append((name, cell.cell_contents, "cell"))
    return refs


def _private_copy(disp, memo: dict, serial: bool = False):
    """A new dispatcher for the same Python function whose njit callees are private
    copies too, so compiling it (unoptimized) leaves the user's dispatchers alone.
    ``serial``: without ``parallel=True``, so that ``prange`` loops are plain loops."""
    import numba
    from numba.core.registry import CPUDispatcher

    if disp in memo:
        return memo[disp]
    py = disp.py_func
    code = py.__code__
    glb = dict(py.__globals__)
    # fresh cells (filled below): the user's closure cells must not change
    cells = tuple(pytypes.CellType(c.cell_contents) if _filled(c) else pytypes.CellType()
                  for c in py.__closure__ or ())
    fn = pytypes.FunctionType(code, glb, py.__name__, py.__defaults__, cells or None)
    fn.__qualname__, fn.__module__, fn.__kwdefaults__ = py.__qualname__, py.__module__, py.__kwdefaults__
    dropped = ("cache", "nopython", "parallel") if serial else ("cache", "nopython")
    opts = {k: v for k, v in disp.targetoptions.items() if k not in dropped}
    # nothing calls the copy from Python or C: no wrappers to lower and generate code for
    opts.update(no_cpython_wrapper=True, no_cfunc_wrapper=True)
    # what the copy's compiler needs to lower the user's typing (zymase.frontends.numba_typing)
    fn.zymase_copy_of, fn.zymase_copies, fn.zymase_same_typing = disp, memo, True
    copy = memo[disp] = numba.njit(pipeline_class=copy_compiler(), **opts)(fn)  # in memo first: recursion
    # what a transform typed inside the copy (zymase.jvp in njit code) compiles its kernel for
    copy.zymase_original = getattr(disp, "zymase_original", disp)
    # `mod.g(...)` with an njit `g` in a module: the global `mod` becomes a copy of the
    # module whose referenced njit attributes are private copies
    for name in code.co_names:
        mod = glb.get(name)
        if isinstance(mod, pytypes.ModuleType):
            attrs = [a for a in code.co_names if isinstance(getattr(mod, a, None), CPUDispatcher)]
            if attrs:
                proxy = pytypes.ModuleType(mod.__name__)
                proxy.__dict__.update(mod.__dict__)
                for a in attrs:
                    setattr(proxy, a, _private_copy(getattr(mod, a), memo, serial))
                glb[name] = proxy
                # the user's typing names the module itself (types.Module), not the proxy
                fn.zymase_same_typing = False
    for name, callee, where in _dispatcher_refs(py):
        sub = _private_copy(callee, memo, serial)
        if where == "global":
            glb[name] = sub
        else:
            cells[code.co_freevars.index(name)].cell_contents = sub
    # a zymase transform the function calls (grad, hessian ... objects): its trampoline
    # is copied too. One the user's code compiled is an -O3 library whose NRT helpers
    # are declarations (NRT_MemInfo_data_fast: the kernel of jacfwd(hessian(f)) called
    # address 0 after an njit Newton step had called the hessian)
    for name in code.co_names:
        if _is_transform(glb.get(name)):
            glb[name] = _CopiedTransform(_private_copy(glb[name].trampoline, memo, serial))
            fn.zymase_same_typing = False  # (typed again, as before session 36: rare and intricate)
    for k, cell in enumerate(cells):
        if _filled(cell) and _is_transform(cell.cell_contents):
            cell.cell_contents = _CopiedTransform(_private_copy(cell.cell_contents.trampoline, memo, serial))
            fn.zymase_same_typing = False
    return copy


def _is_transform(v) -> bool:
    """A zymase transform njit code calls through its trampoline (api.Transformed,
    api_second_order.SecondOrder)."""
    from numba.core.registry import CPUDispatcher

    return isinstance(getattr(v, "trampoline", None), CPUDispatcher) and hasattr(type(v), "_numba_type_")


class _CopiedTransform:
    """A transform as the private copy calls it: through a private copy of its trampoline."""

    def __init__(self, trampoline):
        self.trampoline = trampoline

    @property
    def _numba_type_(self):
        from numba.core import types

        return types.Dispatcher(self.trampoline)


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True


def _overload_templates():
    from numba.core.typing.templates import _OverloadFunctionTemplate

    work, seen = [_OverloadFunctionTemplate], []
    while work:
        cls = work.pop()
        seen.append(cls)
        work.extend(cls.__subclasses__())
    return [c for c in seen if "_impl_cache" in c.__dict__ and "_compiled_overloads" in c.__dict__]


@contextmanager
def _numba_unoptimized():
    """Numba's final module passes at level 0 (only always-inline): the IR zymase
    optimizes itself, without unrolling or vectorization, before AD.

    Numba's own ``@overload`` implementations (``np.empty_like``, ``arr.copy()``, ...)
    are compiled once per signature and cached on their templates; an implementation
    the user's code already needed was compiled at O3 (inlined runtime helpers,
    vector code). Their caches are set aside while the private copy compiles, so it
    gets fresh unoptimized implementations, and put back afterwards.

    The same holds for the subroutines Numba's lowering compiles and caches on its
    target context (``compile_subroutine``: ``np.dot``'s and ``@``'s helpers, array
    allocation): one the user's code compiled first is linked in as its -O3 library,
    whose NRT helpers are declarations (``NRT_MemInfo_data_fast`` lives in Numba's own
    engine), so a kernel built from it called address 0. That cache is set aside too,
    and the user's later compiles never link the copy's unoptimized entries.

    An implementation the user's code compiled whose optimized IR is still the IR
    zymase expects (:func:`_reusable`: no runtime helpers inlined or declared, no
    vector code) is linked into the copy as it is instead of being compiled again
    (``int_power``, ``max``: :class:`_ImplsReusingTheUsers`,
    :class:`_SubroutinesReusingTheUsers`).

    The copies' own caches (:data:`_COPY_CACHES`) are kept from one copy to the next:
    an implementation is typed and lowered once per process, not once per kernel (a
    slice assignment's overloads cost as much as the rest of the function's compile).
    The implementations compiled for a copy get no C-callable wrapper, hence no machine
    code (:func:`_ir_only`): like the copy, they are only linked into it as IR."""
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock
    from numba.core.registry import cpu_target

    with global_compiler_lock:
        old = config.OPT
        saved = [(c, c._impl_cache, c._compiled_overloads, c.__dict__.get("_jit_options"))
                 for c in _overload_templates()]
        context = cpu_target.target_context
        subroutines = context.cached_internal_func
        config.OPT = type(old)(0) if isinstance(old, int) else 0
        for c, user_impl, _, options in saved:
            impl, compiled = _COPY_CACHES.setdefault(c, ({}, {}))
            c._impl_cache, c._compiled_overloads = _ImplsReusingTheUsers(impl, user_impl), compiled
            if options is not None:
                c._jit_options = {**options, "no_cfunc_wrapper": True}
        context.cached_internal_func = _SubroutinesReusingTheUsers(_COPY_SUBROUTINES, subroutines)
        try:
            with _ir_only(), _plain_error_text():
                yield
        finally:
            config.OPT = old
            for c, impl, compiled, options in saved:
                _COPY_CACHES[c][0].update(c._impl_cache)
                c._impl_cache, c._compiled_overloads = impl, compiled
                if options is not None:
                    c._jit_options = options
            _COPY_SUBROUTINES.update(context.cached_internal_func)
            context.cached_internal_func = subroutines


@contextmanager
def _plain_error_text():
    """Numba's error messages without terminal colours while the copy compiles.

    Typing builds and discards hundreds of errors (each failed candidate of an overloaded
    call, constant inference), and with colorama installed every coloured fragment
    initializes and releases colorama's stream wrappers: 3-6% of the copy's compile
    (solar: 2,900 fragments, 0.04 s). A message that reaches the user as a ZymaseError
    has its colour codes removed anyway (:func:`_numba_error`). The scheme is one
    object that Numba's modules share, so its ``_markup`` is replaced on the instance
    and put back afterwards (the caller holds Numba's compiler lock)."""
    from numba.core import errors

    scheme = errors.termcolor()
    if not hasattr(scheme, "_markup"):  # no colorama: the messages are plain already
        yield
        return
    with _instance_attribute(scheme, "_markup", _plain_markup):
        yield


@contextmanager
def _instance_attribute(obj, name: str, value):
    """``obj.<name>`` is ``value`` inside the block; afterwards the instance's own
    attribute is put back, or removed so that the class's shows again."""
    had = obj.__dict__.get(name)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if had is None:
            delattr(obj, name)
        else:
            setattr(obj, name, had)


def _plain_markup(msg, color=None, style=None):
    return msg


def _reusable(library) -> bool:
    """Whether a code library the user's compile finalized (Numba's -O3) can be linked
    into a private copy as it is. Not when its module refers to Numba's runtime
    helpers, inlined or declared: zymase's memory model knows allocations by the calls
    (``NRT_MemInfo_data_fast`` inlined into a load of the MemInfo's data field is a
    load it cannot follow, and a kernel built from it crashed), and the helpers'
    declarations resolve only in Numba's engine (address 0 in the kernel's). Nor with
    vector code or loop metadata, which zymase's pre-AD pipeline never produces, nor
    fast-math flags. The verdict is kept on the library."""
    verdict = getattr(library, "_zymase_reusable", None)
    if verdict is None:
        text = str(library._final_module)
        verdict = not _NOT_REUSABLE.search(text)
        library._zymase_reusable = verdict
    return verdict


#: what makes an optimized library unfit (:func:`_reusable`); Numba's own functions
#: declared but not defined are defined only in Numba's engine too. Fast-math flags:
#: Numba's key of a subroutine has no flags, so one compiled for a ``fastmath=True``
#: caller would otherwise bring its flags into a copy compiled without
_NOT_REUSABLE = re.compile(
    r"@_?(?:NRT|nrt)_|\batomicrmw\b|\bcmpxchg\b|<\d+ x |!llvm\.loop|^declare [^\n]*@_ZN"
    r"|^\s+%\S+ = (?:f[a-z]+|call|select|phi) (?:[a-z]+ )*?(?:fast|reassoc|nnan|ninf|nsz|arcp|contract|afn) ",
    re.M)


class _ImplsReusingTheUsers(dict):
    """An ``@overload`` template's cache of implementations while the private copy
    compiles: the copy's own entries and, on a miss, the implementation the user's
    compile built for the same arguments if :func:`_reusable`. Numba's key carries the
    compile's flags, and the copy's differ from the user's only in having no wrappers.
    An entry is taken only if its dispatcher has compiled those arguments, so the copy
    never compiles into the user's dispatcher."""

    def __init__(self, own: dict, user: dict):
        super().__init__(own)
        self.user = user

    def __missing__(self, key):
        if isinstance(key, tuple) and len(key) == 4 and key[3] is not None:
            flags = key[3].copy()
            flags.no_cpython_wrapper = flags.no_cfunc_wrapper = False
            disp, args = self.user.get(key[:3] + (flags,), (None, None))
            if disp is not None and tuple(disp.fold_argument_types(args, dict(key[2]))[1]) in disp.overloads:
                # (typing calls the dispatcher with these arguments: already compiled,
                # so nothing is compiled into the user's dispatcher)
                if all(_reusable(cres.library) for cres in disp.overloads.values()):
                    return disp, args
        raise KeyError(key)


class _SubroutinesReusingTheUsers(dict):
    """Numba's cache of compiled subroutines (``compile_subroutine``) while the private
    copy compiles: the copy's own entries and the user's that are :func:`_reusable`."""

    def __init__(self, own: dict, user: dict):
        super().__init__(own)
        self.user = user

    def get(self, key, default=None):
        # compile_subroutine looks an entry up with get(), then takes it by index
        if key not in self:
            cres = self.user.get(key)
            if cres is None or not _reusable(cres.library):
                return default
            self[key] = cres
        return self[key]


#: the private copies' caches of @overload implementations, per template class
#: (``_impl_cache``, ``_compiled_overloads``), and of Numba's subroutines
#: (``cached_internal_func``): all compiled unoptimized and IR only, for copies alone
_COPY_CACHES: dict = {}
_COPY_SUBROUTINES: dict = {}


@contextmanager
def _ir_only():
    """Functions compiled without Python and C-callable wrappers (the private copies)
    get no machine code (the caller holds Numba's compiler lock).

    A dispatcher's compile ends in ``get_executable``, which finalizes the code library
    (links the callees' IR in, runs the final module passes), has MCJIT emit machine
    code for it and returns an entry point at the Python wrapper. A function compiled
    without either wrapper can only be reached by linking its IR into a caller's module
    (its entry point is address 0 even with machine code), so its library is finalized
    without the engine: the text is the same, taken before code generation. Everything
    else compiled meanwhile (the ``@overload`` implementations the copy needs) gets
    Numba's own treatment."""
    from numba import _dynfunc
    from numba.core.registry import cpu_target

    context = cpu_target.target_context
    get_executable = context.get_executable

    def ir_only_finalize(library):
        library._finalize_dynamic_globals()
        library._verify_declare_only_symbols()
        library._finalized = True

    def executable(library, fndesc, env):
        if _defines(library, fndesc.llvm_cpython_wrapper_name) or _defines(library, fndesc.llvm_cfunc_wrapper_name):
            return get_executable(library, fndesc, env)
        library._finalize_final_module = pytypes.MethodType(ir_only_finalize, library)
        library._ensure_finalized()
        # the Environment stays alive with the entry point (_link_environments needs it)
        return _dynfunc.make_function(fndesc.lookup_module(), fndesc.qualname.split(".")[-1],
                                      "zymase's IR-only copy (not callable)", 0, env, (library,))

    with _instance_attribute(context, "get_executable", executable):
        yield


def _defines(library, name: str) -> bool:
    """Whether the (not yet finalized) code library defines function ``name``."""
    try:
        return not library._final_module.get_function(name).is_declaration
    except NameError:
        return False


@dataclass
class NumbaIR:
    text: str  # the whole module, Python wrappers removed
    entry: str  # Numba's symbol for the function
    restype: object  # Numba type of the result
    argtypes: tuple
    context: object  # Numba's target context (data models, calling convention)
    seconds: float = 0.0  # Numba's compile time
    # Numba's Environment of the function (the Python objects its code may box values
    # with, e.g. the arguments of a raised exception); kept alive with the IR
    environment: object = None
    #: further functions the kernel's status wrapper must see inlined (a nested
    #: request's entry is the inner kernel; Numba's function is inlined into it)
    inline_too: tuple = ()
    #: the private copy compiled (its njit callees' copies hold the Environments of the
    #: callees inlined into it, which Numba's registry holds only weakly: an objmode block
    #: in a callee boxes its values with its own, "missing Environment" once collected)
    copy: object = None


_ir_cache: dict = {}


def numba_ir(disp, argtypes: tuple, serial: bool = False) -> NumbaIR:
    """Numba's LLVM IR for ``disp`` at ``argtypes``, before LLVM optimization (once per
    function and types); with ``serial``, of a copy whose ``prange`` loops are plain loops."""
    key = (disp, tuple(argtypes), serial)
    with _lock:
        ir = _ir_cache.get(key)
        if ir is None:
            from zymase.collect_rarely import collecting_garbage_rarely

            t0 = time.perf_counter()
            with collecting_garbage_rarely():
                ir = _ir_cache[key] = _numba_ir(disp, tuple(argtypes), serial)
            ir.seconds = time.perf_counter() - t0
        return ir


def _numba_ir(disp, argtypes: tuple, serial: bool) -> NumbaIR:
    from numba.core import errors as nerr

    copy = _private_copy(disp, {}, serial)
    try:
        with _numba_unoptimized():
            copy.compile(tuple(argtypes))
    except nerr.NumbaError as exc:
        raise _numba_error(disp, exc) from None
    cres = copy.overloads[tuple(argtypes)]
    if getattr(cres, "objectmode", False):
        raise ZymaseError(f"{function_label(disp)} fell back to object mode", hint="make it compile with @numba.njit")
    text = _drop_wrappers(cres.library.get_llvm_str())
    return NumbaIR(text, cres.fndesc.llvm_func_name, cres.signature.return_type, tuple(argtypes), cres.target_context,
                   environment=cres.environment, copy=copy)


def _numba_error(disp, exc) -> ZymaseError:
    """Numba's typing/lowering error as one zymase error: the first message line and
    the user's source line."""
    msg = str(exc)
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    first = next((ln for ln in lines if not ln.startswith(("-", "During:", "File"))), lines[0] if lines else "?")
    first = re.sub(r"\x1b\[[0-9;]*m", "", first)
    loc = None
    m = re.search(r'File "([^"]+)", line (\d+)', msg)
    if m:
        loc = f"{m.group(1)}:{m.group(2)}"
    # the line naming what Numba could not type or lower, when there is one
    construct = next((ln[:120] for ln in lines if re.search(r"\b(function|Unsupported|opcode)\b", ln)
                      and not ln.startswith(">")), None)
    return ZymaseError(
        f"Numba cannot compile {function_label(disp)} in nopython mode: {first[:300]}",
        construct=construct,
        location=loc,
        hint="zymase differentiates what @numba.njit compiles; rewrite the construct Numba rejects",
    )


_DEFINE = re.compile(r'^define\b[^@]*@("(?:[^"\\]|\\.)*"|[\w.$-]+)\(')
_DECLARE = re.compile(r'^declare\b[^@]*@("?)([\w.$-]+)\1\(')


def _declared(line: str) -> str | None:
    """The function a ``declare`` line of LLVM IR text declares (None: not a declare)."""
    m = _DECLARE.match(line)
    return m.group(2) if m else None


def _functions(text: str):
    """(name, first line index, last line index) of every ``define`` in LLVM IR text."""
    lines = text.splitlines()
    out = []
    i = 0
    while i < len(lines):
        m = _DEFINE.match(lines[i])
        if m:
            j = i
            while lines[j] != "}":
                j += 1
            out.append((m.group(1).strip('"'), i, j))
            i = j
        i += 1
    return lines, out


def _drop_wrappers(text: str) -> str:
    """Remove Numba's CPython and cfunc wrappers: they call the Python C API, which
    has nothing to differentiate and nothing zymase links against."""
    lines, fns = _functions(text)
    drop = set()
    for name, a, b in fns:
        if name.startswith(("_ZN7cpython", "cfunc.")):
            # also the attribute comment line right above the define
            start = a - 1 if a > 0 and lines[a - 1].startswith("; Function Attrs") else a
            drop.update(range(start, b + 1))
    return "\n".join(ln for k, ln in enumerate(lines) if k not in drop) + "\n"
