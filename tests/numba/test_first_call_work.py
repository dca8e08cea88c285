"""The first ``zymase.grad`` call does no compile work it does not need (issue 29, the
first-call target): the private unoptimized copy of the user's function is compiled
only to IR (no machine code, no Python or C-callable wrappers), the glue zymase
generates has no C-callable wrapper, and Numba compiles and runs the user's code
normally afterwards. Counts, not seconds (bench/numba_first_call.py measures time)."""

import math
from contextlib import contextmanager

import numba
import pytest
import numpy as np
from numba import njit
from numba.core import codegen, lowering

import zymase
from zymase.frontends import numba as zn


@njit
def _scaled_sum(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += a * x[i]
    return s


@njit
def _energy(x, a):
    y = x.copy()  # a Numba @overload (array.copy), recompiled unoptimized for the copy
    for i in range(y.shape[0]):
        y[i] = math.sin(y[i]) * a
    return _scaled_sum(y, a) + np.sum(y * y)


@contextmanager
def _counting():
    """The code libraries Numba emits machine code for and the functions it gives a
    Python (cpython) or C-callable (cfunc) wrapper, while the block runs (qualified names)."""
    seen = {"machine code": [], "cpython": [], "cfunc": []}
    finalize, cpython, cfunc = (codegen.JITCodeLibrary._finalize_specific, lowering.Lower.create_cpython_wrapper,
                                lowering.Lower.create_cfunc_wrapper)

    def count_finalize(library):
        seen["machine code"].append(library.name)
        return finalize(library)

    def count_cpython(lower, *args, **kwargs):
        seen["cpython"].append(lower.fndesc.qualname)
        return cpython(lower, *args, **kwargs)

    def count_cfunc(lower, *args, **kwargs):
        seen["cfunc"].append(lower.fndesc.qualname)
        return cfunc(lower, *args, **kwargs)

    codegen.JITCodeLibrary._finalize_specific = count_finalize
    lowering.Lower.create_cpython_wrapper = count_cpython
    lowering.Lower.create_cfunc_wrapper = count_cfunc
    try:
        yield seen
    finally:
        codegen.JITCodeLibrary._finalize_specific = finalize
        lowering.Lower.create_cpython_wrapper = cpython
        lowering.Lower.create_cfunc_wrapper = cfunc


def test_private_copy_is_compiled_to_ir_only_and_numba_still_works():
    # issue 29 (first grad call): the private copy was compiled to machine code with both
    # wrappers, for the function, its njit callee and Numba's overloads, and never run
    x = np.linspace(0.2, 1.3, 9)
    expected = _energy.py_func(x, 0.7)
    assert _energy(x, 0.7) == expected  # the user's own compile, as before a grad
    argtypes = (numba.typeof(x), numba.float64)
    with _counting() as seen:
        ir = zn.numba_ir(_energy, argtypes)
    # (Numba's own @overload implementations the copy needs are compiled as Numba does)
    for what, names in seen.items():
        assert not {"_energy", "_scaled_sum"} & set(names), (what, names)
    # the copy's IR is complete: the callee and the overload are linked in, unoptimized
    assert "_scaled_sum" in ir.text and "alwaysinline" not in ir.text
    # and differentiates correctly (closed form: d/da of sum(a sin x_i) (a + a sin x_i))
    g = zymase.grad(_energy, 1, cache=False)(x, 0.7)
    s = np.sin(x)
    assert math.isclose(g, float(np.sum(2 * 0.7 * s + 2 * 0.7 * s * s)), rel_tol=1e-12)

    # Numba afterwards: the user's dispatchers untouched, new functions using the same
    # overloads and callee compile to working machine code
    assert _energy(x, 0.7) == expected
    assert list(_energy.overloads) == [argtypes]

    @njit
    def again(x, a):
        return _scaled_sum(x.copy(), a) + np.sum(x * x)

    assert math.isclose(again(x, 0.7), _scaled_sum.py_func(x, 0.7) + float(np.sum(x * x)), rel_tol=1e-14)


def test_python_call_compiles_one_small_function():
    # issue 29 (first grad call): calling a grad from Python compiled the trampoline, the
    # overload behind it and its implementation (three code libraries, each with a C
    # wrapper nothing calls, the implementation's np.zeros_like besides); then (session
    # 27) one njit function taking the kernel's arguments, with a Python wrapper; now
    # (session 29) no Numba compile at all: the kernel gets Numba's CPython wrapper of
    # its own signature (frontends/numba_entry). The private copy adds no machine code.
    @njit
    def product(a, x, b):
        s = 0.0
        for i in range(x.shape[0]):  # a loop: np.sum would bring Numba's overloads in
            s += x[i]
        return a * math.exp(b) * s

    x = np.array([1.0, 2.0])
    assert product(0.5, x, 0.25) == 0.5 * math.exp(0.25) * 3.0
    g = zymase.grad(product, (0, 1, 2), cache=False)
    with _counting() as seen:
        ga, gx, gb = g(0.5, x, 0.25)
    assert (ga, gb) == (3.0 * math.exp(0.25), 1.5 * math.exp(0.25))
    np.testing.assert_array_equal(gx, [0.5 * math.exp(0.25)] * 2)
    assert seen == {"machine code": [], "cpython": [], "cfunc": []}, seen
    # the entry point is kept: a second call with other values compiles nothing either
    with _counting() as seen:
        ga2, gx2, gb2 = g(0.5, 2 * x, 0.25)
    assert seen == {"machine code": [], "cpython": [], "cfunc": []}, seen
    assert (ga2, gb2) == (6.0 * math.exp(0.25), 3.0 * math.exp(0.25))
    np.testing.assert_array_equal(gx2, gx)
    # njit code calls the trampoline, which keeps its C wrapper (njit code may take it
    # as a first-class function); the overload's implementation has none
    @njit
    def twice(a, x, b):
        return g(a, x, b)

    with _counting() as seen:
        assert twice(0.5, x, 0.25)[0] == ga
    assert g.trampoline.py_func.__qualname__ in seen["cfunc"] and "impl" in seen["machine code"], seen
    assert "impl" not in seen["cfunc"], seen  # (Numba's own overloads are "ol_....impl")


def _cube(v):
    """A function only this test module overloads: no other compile has typed it."""
    raise NotImplementedError


@numba.extending.overload(_cube)
def _cube_overload(v):
    def impl(v):
        return v * v * v

    return impl


@njit
def _cubes(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += _cube(x[i])
    return s


@njit
def _scaled_cubes(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += a * _cube(x[i])
    return s


@contextmanager
def _overloads_built():
    """The @overload implementations Numba types and compiles while the block runs
    (the Python functions behind them, by name)."""
    from numba.core.typing.templates import _OverloadFunctionTemplate

    built = []
    build = _OverloadFunctionTemplate._build_impl

    def counted(template, *args, **kwargs):
        built.append(template._overload_func.__name__)
        return build(template, *args, **kwargs)

    _OverloadFunctionTemplate._build_impl = counted
    try:
        yield built
    finally:
        _OverloadFunctionTemplate._build_impl = build


def test_private_copies_share_their_overloads_and_give_them_no_machine_code():
    # issue 29 (first grad call, and the Numba tests' time): every private copy compiled
    # the @overload implementations it needs again from nothing (typing, lowering and,
    # through their C-callable wrapper, machine code nothing runs); a slice assignment's
    # overloads made the copy as slow as the user's whole compile. Now the copies keep
    # their own unoptimized implementations across kernels, IR only.
    x = np.linspace(0.2, 1.3, 7)
    with _counting() as seen, _overloads_built() as built:
        ir = zn.numba_ir(_cubes, (numba.typeof(x),))
    assert built == ["_cube_overload"]
    # (Numba's runtime library "nrt" gets its machine code on its first use in a process)
    seen["machine code"] = [name for name in seen["machine code"] if name != "nrt"]
    assert seen == {"machine code": [], "cpython": [], "cfunc": []}, seen
    assert "alwaysinline" not in ir.text
    with _counting() as seen, _overloads_built() as built:
        g = zymase.grad(_scaled_cubes, (0, 1), cache=False)(x, 0.5)
    assert built == [], built  # the first copy's implementation, reused
    assert seen["machine code"] == [], seen  # (the entry point from Python is not Numba's)
    np.testing.assert_allclose(g[0], 1.5 * x * x, rtol=1e-14)
    assert math.isclose(g[1], float(np.sum(x ** 3)), rel_tol=1e-14)
    # the user's own compiles afterwards build Numba's implementation, with machine code
    with _overloads_built() as built:
        assert math.isclose(_cubes(x), float(np.sum(x ** 3)), rel_tol=1e-14)
        assert math.isclose(_scaled_cubes(x, 0.5), 0.5 * float(np.sum(x ** 3)), rel_tol=1e-14)
    assert built == ["_cube_overload"], built


@njit
def _damped(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.exp(-a * x[i]) * x[i]
    return s


def test_the_function_is_not_carried_beside_its_inlined_body():
    # issue 29: Numba defines f with external linkage, so after the always-inliner had
    # put it into the kernel's status wrapper, its own body went on through the pre-AD
    # passes, the reader and the writer, which nothing called
    from zymase.llvm import toolchain

    x = np.linspace(0.1, 0.9, 6)
    entry = zn.numba_ir(_damped, (numba.typeof(x), numba.float64)).entry
    inlined = []
    inline_always = toolchain.inline_always_module

    def keep(module):
        inline_always(module)
        inlined.append(str(module))

    toolchain.inline_always_module = keep
    try:
        g = zymase.grad(_damped, (0, 1), cache=False)(x, 0.5)
    finally:
        toolchain.inline_always_module = inline_always
    assert len(inlined) == 1 and f"@{entry}(" not in inlined[0]
    e = np.exp(-0.5 * x)
    np.testing.assert_allclose(g[0], e * (1 - 0.5 * x), rtol=1e-14)
    assert math.isclose(g[1], float(-np.sum(x * x * e)), rel_tol=1e-14)


def test_what_is_not_only_called_keeps_its_linkage():
    wrapper = "define internal void @w(ptr %p) {\n  %s = call i32 @f(ptr %p)\n  ret void\n}\n"
    f = "define i32 @f(ptr %p) {\n  ret i32 0\n}\n"
    assert zn.discard_once_inlined(f + wrapper, ("f",)).startswith("define linkonce_odr i32 @f(")
    assert zn.discard_once_inlined(f, ("f",)) == f  # called nowhere: the sparsity analysis reads it
    recursive = "define i32 @f(ptr %p) {\n  %s = call i32 @f(ptr %p)\n  ret i32 %s\n}\n"
    assert zn.discard_once_inlined(recursive + wrapper, ("f",)).startswith("define i32 @f(")
    taken = wrapper + "define internal void @v() {\n  store ptr @f, ptr null\n  ret void\n}\n"
    assert "define i32 @f(" in zn.discard_once_inlined(f + taken, ("f",))
    passed = "define internal void @u(ptr %p) {\n  call void @g(ptr @f)\n  ret void\n}\n"
    assert "define i32 @f(" in zn.discard_once_inlined(f + wrapper + passed, ("f",))
    assert zn.discard_once_inlined(f + wrapper, ("other",)) == f + wrapper


@njit
def _softplus_sum(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += math.log1p(math.exp(x[i]))
    return s


def test_the_build_collects_garbage_rarely_and_puts_the_threshold_back():
    # issue 29: at Python's default threshold the cyclic collector ran hundreds of times
    # over the build's growing heap (11-12% of GMM's first grad call)
    import gc

    from zymase import collect_rarely
    from zymase.frontends import numba_copy

    saved = gc.get_threshold()
    seen = {}
    copy, compile_kernel = numba_copy._numba_ir, zn._compile_kernel

    def copy_seen(*args):
        seen["copy"] = gc.get_threshold()[0]
        return copy(*args)

    def kernel_seen(*args):
        seen["kernel"] = gc.get_threshold()[0]
        return compile_kernel(*args)

    numba_copy._numba_ir, zn._compile_kernel = copy_seen, kernel_seen
    try:
        gc.set_threshold(700, *saved[1:])
        x = np.linspace(-1.0, 1.0, 5)
        g = zymase.grad(_softplus_sum, cache=False)(x)
        assert gc.get_threshold()[0] == 700
    finally:
        numba_copy._numba_ir, zn._compile_kernel = copy, compile_kernel
        gc.set_threshold(*saved)
    assert seen == {"copy": collect_rarely.BUILD_GC_THRESHOLD, "kernel": collect_rarely.BUILD_GC_THRESHOLD}
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-x)), rtol=1e-14)
    # nested builds restore once, at the end; a threshold of 0 (collection off) is kept
    try:
        gc.set_threshold(700, *saved[1:])
        with collect_rarely.collecting_garbage_rarely():
            with collect_rarely.collecting_garbage_rarely():
                pass
            assert gc.get_threshold()[0] == collect_rarely.BUILD_GC_THRESHOLD
        assert gc.get_threshold()[0] == 700
        gc.set_threshold(0, *saved[1:])
        with collect_rarely.collecting_garbage_rarely():
            assert gc.get_threshold()[0] == 0
        assert gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*saved)


@njit
def _mixed(x, k):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] ** k + math.sqrt(abs(x[i])) * np.sum(x * x)
    return s


def test_private_copy_builds_its_discarded_error_text_without_colours():
    # issue 29: typing builds and discards hundreds of Numba errors (the candidates of an
    # overloaded call that fail), and with colorama each coloured fragment set up and
    # released colorama's stream wrappers: 3-6% of the copy's compile
    from numba.core import errors

    scheme = type(errors.termcolor())
    markup = scheme._markup
    calls = []

    def counted(self, msg, *args, **kwargs):
        calls.append(msg)
        return markup(self, msg, *args, **kwargs)

    scheme._markup = counted
    try:
        x = np.linspace(0.5, 1.5, 5)
        zn.numba_ir(_mixed, (numba.typeof(x), numba.int64))
        assert calls == [], len(calls)
        # the user's own errors keep Numba's colours
        with pytest.raises(numba.core.errors.TypingError):
            njit(lambda v: v + "text")(1.0)
        assert calls
    finally:
        scheme._markup = markup
    g = zymase.grad(_mixed, 0, cache=False)(x, 2)
    total = float(np.sum(x * x))
    np.testing.assert_allclose(g, 2 * x + 1 / (2 * np.sqrt(x)) * total + 2 * x * float(np.sum(np.sqrt(x))),
                               rtol=1e-12)


@njit
def _logistic_sum(x, a):
    s = 0.0
    for i in range(x.shape[0]):
        s += 1.0 / (1.0 + math.exp(-a * x[i]))
    return s


def test_the_pre_ad_pipeline_parses_the_module_twice():
    # issue 29: reference-count pruning, inlining, pruning, the pre-AD passes and pruning
    # again each parsed, verified and printed the module (five text round trips); the
    # last four now run on one parsed module (the first prints the text the callee and
    # marker marks are written into)
    from zymase.frontends import c as zc
    from zymase.llvm import toolchain

    parse, differentiate = toolchain._parse, zc.differentiate_llvm_ir
    parsed, before_ad = [], []

    def counted(text):
        parsed.append(len(text))
        return parse(text)

    def entered(*args, **kwargs):
        before_ad.append(len(parsed))
        return differentiate(*args, **kwargs)

    toolchain._parse, zc.differentiate_llvm_ir = counted, entered
    try:
        x = np.linspace(-1.0, 1.0, 6)
        g = zymase.grad(_logistic_sum, (0, 1), cache=False)(x, 1.5)
    finally:
        toolchain._parse, zc.differentiate_llvm_ir = parse, differentiate
    assert before_ad == [2], (before_ad, parsed)
    s = 1 / (1 + np.exp(-1.5 * x))
    np.testing.assert_allclose(g[0], 1.5 * s * (1 - s), rtol=1e-13)
    # (x is symmetric about 0: the sum is 0 but for rounding, whose residue depends on
    # the order the derivative sums in, so it is compared with an absolute tolerance)
    assert math.isclose(g[1], float(np.sum(x * s * (1 - s))), rel_tol=1e-13, abs_tol=1e-15)


@njit
def _weighted(x, a):
    return _scaled_sum(x * x, a)


def test_callees_are_in_ssa_form_before_they_are_inlined():
    # issue 29, session 28: SROA over the status wrapper once every callee is inside it
    # placed each stack slot's phis over the whole CFG (md: 450 slots, 14,000
    # instructions, twice the pre-AD O2 pipeline's time); run on each function before
    # the always-inliner, it promotes the slots in their own small CFGs
    from zymase.llvm import toolchain

    x = np.linspace(0.1, 0.9, 5)
    runs = []
    named = toolchain._run_named_passes

    def recording(module, passes):
        runs.append(list(passes))
        named(module, passes)

    toolchain._run_named_passes = recording
    try:
        g = zymase.grad(_weighted, (0, 1), cache=False)(x, 0.5)
    finally:
        toolchain._run_named_passes = named
    inlining = [p for p in runs if "always_inliner" in p]
    assert len(inlining) == 1, runs
    assert inlining[0].index("sroa") < inlining[0].index("always_inliner"), inlining[0]
    np.testing.assert_allclose(g[0], 2 * 0.5 * x, rtol=1e-14)
    assert math.isclose(g[1], float(np.sum(x * x)), rel_tol=1e-14)


def _plus_half_square(v):
    """A function only this test overloads: no other compile has typed it."""
    raise NotImplementedError


@numba.extending.overload(_plus_half_square)
def _plus_half_square_overload(v):
    def impl(v):
        return v + 0.5 * v * v

    return impl


@njit
def _powers(x, k):
    y = np.empty(x.shape[0])  # an allocating overload: its -O3 IR has the runtime helpers inlined
    s = 0.0
    for i in range(x.shape[0]):
        y[i] = _plus_half_square(x[i])
        s += y[i] ** k  # Numba's int_power, a subroutine cached on the target context
    return s


def test_private_copy_links_the_users_implementations_that_need_no_recompile(monkeypatch):
    # issue 29 (first grad call): the copy compiled again, unoptimized, every @overload
    # implementation and subroutine the user's compile of the primal had built (md: int_power
    # 0.05 s of a 0.45 s copy). Now it links the user's own when their optimized IR has
    # nothing zymase cannot take (here the overload and int_power), and compiles its own
    # otherwise (np.empty: NRT_MemInfo_data_fast inlined, which crashed kernels)
    from numba.core.registry import cpu_target

    from zymase.frontends import numba_copy

    x = np.linspace(0.2, 1.1, 6)
    y = x + 0.5 * x * x
    assert math.isclose(_powers(x, 3), float(np.sum(y ** 3)), rel_tol=1e-14)  # the user's compile
    # the copies' caches empty, as in a fresh process
    monkeypatch.setattr(numba_copy, "_COPY_CACHES", {})
    monkeypatch.setattr(numba_copy, "_COPY_SUBROUTINES", {})
    users = dict(cpu_target.target_context.cached_internal_func)
    with _overloads_built() as built:
        g = zymase.grad(_powers, 0, cache=False)(x, 3)
    assert "_plus_half_square_overload" not in built and "ol_np_empty" in built, built
    shared = {key[0].co_name for key, cres in numba_copy._COPY_SUBROUTINES.items() if users.get(key) is cres}
    assert "int_power" in shared, shared
    assert cpu_target.target_context.cached_internal_func == users  # the user's cache untouched
    np.testing.assert_allclose(g, 3 * y * y * (1 + x), rtol=1e-13)
    assert math.isclose(_powers(x, 3), float(np.sum(y ** 3)), rel_tol=1e-14)


def test_what_an_optimized_library_must_not_have_to_be_linked_into_a_copy():
    from zymase.frontends.numba_copy import _reusable

    class Library:
        def __init__(self, body, extra=""):
            self._final_module = (f"{extra}define linkonce_odr i32 @_ZN5numba4f(ptr %r, double %x) {{\n"
                                  f"entry:\n{body}  ret i32 0\n}}\n")

    pure = "  %y = fmul double %x, %x\n  store double %y, ptr %r, align 8\n"
    assert _reusable(Library(pure))
    unfit = [
        Library("  %d = getelementptr i8, ptr %r, i64 24\n  %p = load ptr, ptr %d\n"
                "  call void @NRT_decref(ptr %p)\n"),  # an NRT helper, called or declared
        Library(pure, "declare void @NRT_decref(ptr)\n"),
        Library(pure, "declare i32 @_ZN5numba6helperE(ptr)\n"),  # defined in Numba's engine only
        Library("  %v = load <2 x double>, ptr %r, align 8\n"),
        Library("  %o = atomicrmw add ptr %r, i64 1 monotonic\n"),
        Library("  %y = fmul fast double %x, %x\n"),
        Library("  %y = fadd nnan ninf double %x, %x\n"),
        Library("  %y = call contract double @llvm.fma.f64(double %x, double %x, double %x)\n"),
        Library(pure + "  br label %entry, !llvm.loop !0\n"),
    ]
    assert [_reusable(lib) for lib in unfit] == [False] * len(unfit)
