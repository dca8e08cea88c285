"""The native toolchain around zymase: LLVM pass pipelines, objects, linking.

This module knows nothing about automatic differentiation. It runs LLVM's pass pipelines
on LLVM IR text (llvmlite's, or LLVM's release library's through
:mod:`zymase.llvm.libllvm`), links modules and zymase's C runtimes, and writes object
files and executables for ``zymase cc``. C becomes LLVM IR in :mod:`zymase.llvm.clang`
(whose names its callers find here too: ``toolchain.c_to_llvm_ir``, ``find_clang``). The
JIT for the Python API and ``zymase run`` is :mod:`zymase.llvm.jit`.

Pipelines, following Enzyme's recipe:

* :func:`preopt` runs *before* AD: the O-level pipeline without loop vectorization,
  SLP vectorization and loop unrolling (vector code and unrolled loops are harder
  to differentiate and make the derivative bigger, not faster). Level 0 only
  promotes locals to SSA registers (SROA), so that the AD sees values, not memory.
* :func:`optimize` runs *after* AD: the full O-level pipeline, vectorizers included, as
  clang runs it (the SLP vectorizer at -O2 and -O3, which clang switches on).

Every failure a user can cause is a :class:`~zymase.errors.ZymaseError`.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from zymase.errors import ZymaseError
from zymase.llvm.clang import (  # (also this module's names, for its callers: __all__)
    ENZYME_ATTRIBUTES_HEADER,
    INCLUDE_DIR,
    MAX_CLANG,
    MIN_CLANG,
    Clang,
    c_to_llvm_ir,
    compiles_cxx,
    find_clang,
    is_cxx_source,
    runtime_ir,
)


class _Binding:
    """``llvmlite.binding``, loaded on first use. A build the derivative cache serves
    runs clang and copies files; loading LLVM's shared library (about 0.1 s) would be
    a third of its time (tests/python/test_build_cache.py)."""

    def __getattr__(self, name: str):
        import llvmlite.binding as binding

        globals()["llvm"] = binding  # the module's own name, from now on the binding itself
        return getattr(binding, name)


llvm = _Binding()



def link_modules(ll_text: str, other: str, *, same_definitions: bool = False) -> str:
    """The module ``ll_text`` with the module ``other`` linked into it (LLVM's linker:
    declarations resolved, ``linkonce_odr`` duplicates merged, attribute groups and
    metadata renumbered). ``same_definitions``: a symbol both define is known to be the
    same code in both (Numba's function compiled once, linked in from two kernels'
    sources), and the first module's definition is kept."""
    from zymase.llvm.modules import Workspace

    with Workspace() as space:
        module = space.parse(ll_text)
        linked = space.parse(other)
        linked.triple, linked.data_layout = module.triple, module.data_layout
        if same_definitions:
            defined = {v.name for v in [*module.functions, *module.global_variables] if not v.is_declaration}
            for v in [*linked.functions, *linked.global_variables]:
                if v.name in defined and not v.is_declaration and v.linkage == space.Linkage.external:
                    v.linkage = space.Linkage.linkonce_odr
        try:
            space.link(module, linked)
        except RuntimeError as exc:
            raise ZymaseError(f"LLVM's linker refused to link two modules: {str(exc).strip().splitlines()[0]}",
                              hint="report this with the functions involved") from None
        return str(module)


def link_c_runtime(ll_text: str, source: str | Path, prefix: str, *, host: bool = False) -> str:
    """``ll_text`` with the functions of the C file ``source`` linked in (the runtime that
    generated derivatives call, e.g. autodiff/rules/blas_runtime.c), made internal so that
    every object file may carry its own copy and LLVM may inline or drop them. Only the
    functions named ``prefix...`` are the runtime's; they must not be defined yet.
    ``host``: the runtime's functions are optimized and compiled for this machine's CPU
    (:func:`for_host_cpu`), for code the JIT runs here only."""
    from zymase.llvm.modules import Workspace

    with Workspace() as space:
        module = space.parse(ll_text)
        # the module's own local definitions stay, even those nothing in it uses (a static
        # function of a differentiated part that only the code left out calls,
        # llvm/reachable): external while dead code is removed below, their linkage given
        # back after
        kept = {v.name: v.linkage for v in [*module.functions, *module.global_variables]
                if not v.is_declaration and v.linkage in (space.Linkage.internal, space.Linkage.private)}
        for v in [*module.functions, *module.global_variables]:
            if v.name in kept:
                v.linkage = space.Linkage.external
        runtime_text = runtime_ir(str(source))
        runtime = space.parse(for_host_cpu(runtime_text) if host else runtime_text)
        runtime.triple, runtime.data_layout = module.triple, module.data_layout
        space.link(module, runtime)
        for fn in module.functions:
            if fn.name.startswith(prefix) and not fn.is_declaration:
                fn.linkage = space.Linkage.internal
        # the runtime functions no derivative calls go, with the BLAS/LAPACK routines only
        # they declare (also at -O0, whose pipeline would keep them)
        space.drop_dead(module, prototypes=True)
        for v in [*module.functions, *module.global_variables]:
            if v.name in kept:
                v.linkage = kept[v.name]
        return space.print(module)


_CPU_ATTRS = re.compile(r'"(target-cpu|tune-cpu|target-features)"="[^"]*"')


def host_cpu_identity() -> str:
    """This machine's CPU name and features (a cache key part of host-specific code)."""
    _init_llvm()
    return f"{llvm.get_host_cpu_name()} {llvm.get_host_cpu_features().flatten()}"


def for_host_cpu(ll_text: str) -> str:
    """``ll_text`` (clang's output for generic x86-64) with every function's
    ``target-cpu``, ``tune-cpu`` and ``target-features`` set to this machine's, as Numba
    compiles its own code: the post-AD pipeline then vectorizes those functions for the
    host's vector width (AVX2 rather than SSE2). Only for code that runs here (the JIT):
    the Numba kernels' disk-cache key holds the host CPU (frontends/numba._disk_key)."""
    _init_llvm()
    host = {"target-cpu": llvm.get_host_cpu_name(), "tune-cpu": llvm.get_host_cpu_name(),
            "target-features": llvm.get_host_cpu_features().flatten()}
    return drop_unknown_target_features(_CPU_ATTRS.sub(lambda m: f'"{m.group(1)}"="{host[m.group(1)]}"', ll_text))


# --------------------------------------------------------------------------------------
# llvmlite: initialization, target machine, parsing
# --------------------------------------------------------------------------------------


_FEATURES_ATTR = re.compile(r'"target-features"="([^"]*)"')


def drop_unknown_target_features(ll_text: str) -> str:
    """The IR with the ``target-features`` entries that LLVM 22 does not know
    removed. A clang of another LLVM version names some features differently (clang 19's
    ``-march=native`` lists ``-avx10.1-256``, which LLVM 22 renamed); LLVM would ignore
    such an entry anyway, but it warns once per function and pass, flooding stderr."""
    lists = set(_FEATURES_ATTR.findall(ll_text))
    unknown = set().union(*(_unknown_features(f) for f in lists)) if lists else set()
    if not unknown:
        return ll_text

    def keep_known(m: re.Match) -> str:
        kept = [f for f in m.group(1).split(",") if f and f not in unknown]
        return f'"target-features"="{",".join(kept)}"'

    return _FEATURES_ATTR.sub(keep_known, ll_text)


@functools.cache
def _unknown_features(features: str) -> frozenset[str]:
    """The entries of a feature list that LLVM rejects: it reports each on stderr when a
    target machine is made with them, so we make one with stderr captured."""
    from zymase.llvm import libllvm

    if libllvm.available():
        def make_target_machine():
            libllvm.check_target_machine(libllvm.process_triple(), features)
    else:
        _init_llvm()
        target = llvm.Target.from_default_triple()

        def make_target_machine():
            target.create_target_machine(features=features)
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+") as captured:
        os.dup2(captured.fileno(), 2)
        try:
            make_target_machine()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        captured.seek(0)
        report = captured.read()
    return frozenset(re.findall(r"'([+-][^']+)' is not a recognized feature", report))


@functools.cache
def _init_llvm() -> None:
    # llvm.initialize() is deprecated in llvmlite 0.50 (it raises); the core is
    # initialized automatically. The native target and asm printer are not.
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    llvm.initialize_native_asmparser()


def target_machine(opt: int = 2, *, jit: bool = False) -> llvm.TargetMachine:
    """A TargetMachine for the host triple (PIC, small code model).

    With ``jit=True`` it targets the host CPU and its features (the code runs here);
    otherwise it is generic for the triple, like clang without ``-march``: the
    ``target-cpu``/``target-features`` attributes of each function still decide.
    """
    _init_llvm()
    target = llvm.Target.from_default_triple()
    if jit:
        return target.create_target_machine(
            cpu=llvm.get_host_cpu_name(),
            features=llvm.get_host_cpu_features().flatten(),
            opt=opt,
            # MCJIT places code anywhere in the address space: calls into libm may be
            # farther than 2 GiB, which PIC's 32-bit PC-relative calls cannot reach
            # (the relocation overflows silently and the call jumps into nowhere).
            # The static relocation model with the JIT code model uses 64-bit
            # absolute addresses, as Numba does.
            reloc="static",
            codemodel="jitdefault",
            jit=True,
        )
    return target.create_target_machine(opt=opt, reloc="pic", codemodel="default")


def _check_level(level: int) -> None:
    if not isinstance(level, int) or not 0 <= level <= 3:
        raise ZymaseError(
            f"optimization level must be 0, 1, 2 or 3, not {level!r}",
            hint="use -O0, -O1, -O2 or -O3",
        )


def _parse(ll_text: str) -> llvm.ModuleRef:
    """Parse and verify LLVM IR text; fill in the host triple/data layout if missing."""
    _init_llvm()
    try:
        module = llvm.parse_assembly(ll_text)
        module.verify()
    except RuntimeError as exc:
        text = str(exc).strip()
        # llvmlite prefixes LLVM's own diagnostic with a generic first line.
        lines = [l for l in text.splitlines() if l.strip() and l.strip() != "LLVM IR parsing error"]
        first = lines[0].replace("<string>", "line") if lines else "parse failure"
        raise ZymaseError(
            f"invalid LLVM IR: {first}",
            hint="the IR must be LLVM 22 compatible (clang 14..22) and pass the verifier",
        ) from None
    if not module.triple:
        module.triple = llvm.get_process_triple()
    if not module.data_layout:
        module.data_layout = str(target_machine().target_data)
    return module


def _verifies(module: llvm.ModuleRef) -> bool:
    try:
        module.verify()
    except RuntimeError:
        return False
    return True


def _print(module: llvm.ModuleRef) -> str:
    try:
        module.verify()
    except RuntimeError as exc:  # a pass broke the module: an internal bug
        raise RuntimeError(f"LLVM module does not verify after optimization: {exc}") from exc
    return str(module)


def parse_module(ll_text: str) -> llvm.ModuleRef:
    """LLVM IR text as a verified llvmlite module (invalid IR is a ZymaseError)."""
    return _parse(ll_text)


def print_module(module: llvm.ModuleRef) -> str:
    """A module built or changed with llvmlite, verified, as text."""
    return _print(module)


def _run_pipeline(module: llvm.ModuleRef, level: int, *, vectorize: bool, host: bool = False,
                  slp: bool = True) -> None:
    pto = llvm.create_pipeline_tuning_options(speed_level=level)
    # LLVM's pipeline options leave the SLP vectorizer off unless asked; clang asks at -O2
    # and -O3 (its -vectorize-slp), and the primal must come out as clang's would: without
    # it, straight-line code on neighbouring elements stayed scalar where clang's is vector
    # code (tests/python/test_primal_parity.py).
    pto.slp_vectorization = vectorize and slp and level >= 2
    # nor the loop vectorizer at -O1 (clang's -O1 leaves loops scalar; LLVM's C API, which
    # llvm/libllvm drives, builds -O1 without it whatever the options say: both agree)
    pto.loop_vectorization = vectorize and level >= 2
    if not vectorize:
        pto.loop_vectorization = False
        pto.slp_vectorization = False
        pto.loop_unrolling = False
    tm = target_machine(opt=level, jit=host)
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)


def preopt(ll_text: str, level: int) -> str:
    """The pre-AD pipeline; returns verified LLVM IR text.

    Levels 1..3: the O-level module pipeline without loop vectorization, SLP
    vectorization and loop unrolling (Enzyme's recipe); ``#pragma clang loop
    vectorize(enable)`` and the like are hidden from it, and kept for after AD. Level 0: SROA only, which
    promotes allocas of scalars to SSA values (what mem2reg would do, and more).
    Nothing is internalized; like clang's own O2, unused ``internal`` functions may
    be deleted.

    GVN's load PRE across loop iterations is off here: it turns a stencil's ``u[i]``
    into the ``u[i + 1]`` loaded one iteration earlier, carried in a phi, and the
    reverse sweep then carries that phi's adjoint from one iteration to the next, a
    dependence that keeps the reverse loop in descending order, scalar and its adds
    ungathered (``autodiff/stencil_gather.py``). The post-AD pipeline runs it as usual.
    """
    from zymase.llvm.loop_hints import hide_vectorization_hints

    _check_level(level)
    ll_text = hide_vectorization_hints(ll_text)
    if level > 0:
        released = _release_pipeline(ll_text, level, vectorize=False, options=_PREOPT_OPTIONS)
        if released is not None:
            return released
    return on_module(ll_text, lambda module: preopt_module(module, level))


#: LLVM options of the pre-AD pipeline (name -> (value, LLVM's default)): see :func:`preopt`
_PREOPT_OPTIONS = {"enable-load-in-loop-pre": ("false", "true")}
#: and of the post-AD pipeline: see :func:`optimize`
_OPTIMIZE_OPTIONS = {"hoist-runtime-checks": ("false", "true")}


def _release_pipeline(ll_text: str, level: int, *, vectorize: bool, options: dict[str, tuple[str, str]],
                      host: bool = False) -> str | None:
    """The O-level pipeline (as :func:`_run_pipeline` builds it) in LLVM's release library
    (:mod:`zymase.llvm.libllvm`): the optimized, verified text; None without the library,
    or when the text does not parse or verify there (llvmlite's path then reports it in
    the user's terms). With ``vectorize`` at -O2 and -O3 the SLP vectorizer runs, and when
    its output does not verify the pipeline runs again without it (:func:`optimize`)."""
    from zymase.llvm import libllvm
    from zymase.llvm.modules import host_cpu, host_data_layout, host_triple

    if not libllvm.available():
        return None
    triple, layout = host_triple(), host_data_layout()
    cpu = features = ""
    reloc, code_model = "pic", "default"
    if host:
        cpu, features = host_cpu()
        reloc, code_model = "static", "jitdefault"
    slp_choices = (True, False) if vectorize and level >= 2 else (False,)
    for slp in slp_choices:
        try:
            with libllvm.Module(ll_text, triple=triple, data_layout=layout) as module:
                if module.verify() is not None:
                    return None
                module.run(f"default<O{level}>", opt=level, loop_vectorize=vectorize, slp=slp, unroll=vectorize,
                           options=options, cpu=cpu, features=features, reloc=reloc, code_model=code_model)
                problem = module.verify()
                if problem is None:
                    return module.text()
        except libllvm.LLVMError:
            return None
        if slp is False:
            raise RuntimeError(f"LLVM module does not verify after optimization: {problem}")
    return None


def preopt_module(module: llvm.ModuleRef, level: int) -> None:
    """:func:`preopt`'s passes on a parsed module (vectorization hints already hidden)."""
    _check_level(level)
    if level == 0:
        pm = llvm.create_new_module_pass_manager()
        pm.add_sroa_pass()
        pm.run(module, llvm.create_pass_builder(target_machine(opt=0),
                                                llvm.create_pipeline_tuning_options(0)))
    else:
        llvm.set_option("", "-enable-load-in-loop-pre=false")
        try:
            _run_pipeline(module, level, vectorize=False)
        finally:
            llvm.set_option("", "-enable-load-in-loop-pre=true")  # LLVM's default


def on_module(ll_text: str, *steps) -> str:
    """Parse ``ll_text`` once, apply each step (a function changing an llvmlite module in
    place) in order, and verify and print the result once. A pipeline of several steps
    (the Numba path's reference-count pruning, inlining and pre-AD passes) pays one
    parse and print instead of one per step (each about 10 ms on a first call's module)."""
    module = _parse(ll_text)
    for step in steps:
        step(module)
    return _print(module)


def _run_passes(ll_text: str, passes: list[str]) -> str:
    """Run the named module passes (``add_<name>_pass`` of llvmlite), in order."""
    return on_module(ll_text, lambda module: _run_named_passes(module, passes))


def _run_named_passes(module: llvm.ModuleRef, passes: list[str]) -> None:
    pb = llvm.create_pass_builder(target_machine(opt=0), llvm.create_pipeline_tuning_options(0))
    pm = llvm.create_new_module_pass_manager()
    for name in passes:
        getattr(pm, f"add_{name}_pass")()
    pm.run(module, pb)


def ssa_form(ll_text: str) -> str:
    """The least optimization that puts front-end IR into SSA form: SROA (allocas of
    scalars and structs to values) and instcombine (folds ``extractvalue`` of
    ``insertvalue`` chains, Numba's way of passing arrays around). No inlining, LICM,
    GVN or loop passes: AD still sees the program as written."""
    return _run_passes(ll_text, ["sroa", "instruction_combine", "sroa"])


def inline_always(ll_text: str) -> str:
    """Inline the ``alwaysinline`` functions, then only the clean-up that puts the
    result in SSA form (SROA, instcombine, CFG simplification): no jump threading or
    loop passes yet, so the blocks of an inlined call keep their shape."""
    return on_module(ll_text, inline_always_module)


def inline_always_module(module: llvm.ModuleRef) -> None:
    """:func:`inline_always` on a parsed module.

    SROA runs on every function before the inliner as well as after it: each callee's
    stack slots are promoted in its own small CFG. On the one function inlining leaves,
    SROA's promotion computes each slot's phi placement over the whole CFG; Numba's -O0
    code has a slot per variable (md's status wrapper: 450 slots, 14,000 instructions),
    and that single SROA cost about twice the whole pre-AD O2 pipeline after it (issue
    29, first-call time: 0.09 of md's 0.12 s here, 0.04 s when the callees come in
    promoted)."""
    _run_named_passes(module, ["sroa", "always_inliner", "sroa", "instruction_combine", "simplify_cfg", "sroa"])


def prune_refcounts(ll_text: str) -> str:
    """Numba's reference-count pruning (llvmlite's refprune pass): removes matching
    ``NRT_incref``/``NRT_decref`` pairs, which otherwise pin arrays in the AD'd code."""
    return on_module(ll_text, prune_refcounts_module)


def prune_refcounts_module(module: llvm.ModuleRef) -> None:
    """:func:`prune_refcounts` on a parsed module."""
    pto = llvm.create_pipeline_tuning_options(speed_level=0)
    pb = llvm.create_pass_builder(target_machine(opt=0), pto)
    pm = pb.getModulePassManager()
    pm.add_refprune_pass()
    pm.run(module, pb)


def optimize(ll_text: str, level: int, *, for_jit: bool = False, host: bool = False) -> str:
    """The post-AD pipeline: the full O-level pipeline, vectorizers included.

    Level 0 returns the text unchanged. With ``for_jit`` (the module goes to :func:`jit`
    next) the text is an :class:`OptimizedIR`, which hands :func:`jit` the module. With
    ``host`` the passes see this machine's CPU (its vector width) where a function names
    no CPU of its own: for code that runs here only.

    The loop vectorizer's runtime alias checks are not hoisted out of outer loops here.
    Hoisting widens an inner loop's check to the whole outer loop and assumes the outer
    loop walks memory upwards; a reverse sweep walks it downwards, so the hoisted check
    always reports a conflict and the vector loop is dead code (the FFT's adjoint passes
    stayed scalar). Checked on each entry to the inner loop, they pass.
    """
    _check_level(level)
    if level == 0:
        return barriers_to_fences(ll_text)
    released = _release_pipeline(ll_text, level, vectorize=True, options=_OPTIMIZE_OPTIONS, host=host)
    if released is not None:
        # (the JIT parses it: llvmlite's LLVM cannot take the release library's module)
        return barriers_to_fences(released)
    module = _parse(ll_text)
    verified = False
    llvm.set_option("", "-hoist-runtime-checks=false")
    try:
        _run_pipeline(module, level, vectorize=True, host=host)
        if level >= 2:
            verified = _verifies(module)
            if not verified:
                # LLVM 22.1's SLP vectorizer can leave a shufflevector before the vector
                # fmul it reads (njit-hessian fuzz seed 910002: the forward-over-reverse
                # Hessian kernel at width 8, its fwddiffe8 derivative inlined into the
                # kernel); the pipeline again without it gives valid code
                module = _parse(ll_text)
                _run_pipeline(module, level, vectorize=True, host=host, slp=False)
    finally:
        llvm.set_option("", "-hoist-runtime-checks=true")  # LLVM's default, for Numba's own code
    text = str(module) if verified else _print(module)  # (verified once, not twice)
    fenced = barriers_to_fences(text)
    if fenced is not text:  # (the module still holds the barriers: its text is parsed again)
        return fenced
    return OptimizedIR(text, module) if for_jit else text


_BARRIER = "@llvm.canonicalize."


def barriers_to_fences(ll_text: str) -> str:
    """``ll_text`` with every ``llvm.canonicalize`` made ``llvm.arithmetic.fence`` (of the
    same type), once the post-AD pipeline is done with them. The reverse sweep reads a
    rounded partial behind canonicalize where the loop vectorizer should widen the read
    (autodiff/rounded_partials: modules that call no canonicalize of their own); no
    vectorizer runs after this, and the fence is free in code generation where
    canonicalize is a multiplication, and compiles in any LLVM (a clang before 21 cannot
    generate code for canonicalize on x86). The text itself when there is none."""
    if _BARRIER not in ll_text:
        return ll_text
    # (a type whose fence the module declares already keeps one declaration; the substring
    # test spares a module without fences the multiline search, which tries every
    # character: about 8M instructions of kpp's first grad)
    declared = set(_FENCE_DECLARATION.findall(ll_text)) if "@llvm.arithmetic.fence." in ll_text else set()
    if declared:
        ll_text = _BARRIER_DECLARATION.sub(lambda m: "" if m.group(1) in declared else m.group(0), ll_text)
    return ll_text.replace(_BARRIER, "@llvm.arithmetic.fence.")


_FENCE_DECLARATION = re.compile(r"^declare [^@\n]*@llvm\.arithmetic\.fence\.([\w.]+)\(", re.M)
_BARRIER_DECLARATION = re.compile(r"^declare [^@\n]*@llvm\.canonicalize\.([\w.]+)\(.*\n", re.M)


class OptimizedIR(str):
    """The text :func:`optimize` (``for_jit``) or ``clang_primal.take_clang_functions``
    returns, holding the module it printed, so that :func:`jit` or :func:`emit_object` of
    this very text compiles that module instead of parsing the text again (a first
    ``zymase.grad`` call's module: about 10 ms of parsing and verification; hand's module
    in ``zymase cc``: 13 ms). A string made from it (``+``, ``replace``, slicing) is a plain
    ``str`` and is parsed as usual; the module goes to the first :func:`jit` or
    :func:`emit_object` of the text (which owns it), later ones parse."""

    def __new__(cls, text: str, module):
        self = super().__new__(cls, text)
        self.parsed = module
        return self

    def take_module(self):
        """The parsed module, once (None afterwards)."""
        module, self.parsed = self.parsed, None
        return module


# --------------------------------------------------------------------------------------
# Objects and linking
# --------------------------------------------------------------------------------------


def emit_object(ll_text: str, path: str | Path, opt: int = 2) -> None:
    """Write a native object file for LLVM IR text (host triple, PIC); an
    :class:`OptimizedIR` gives its module, once, instead of being parsed."""
    from zymase.llvm import libllvm

    parsed = ll_text.take_module() if isinstance(ll_text, OptimizedIR) else None
    if isinstance(parsed, libllvm.Module):  # (llvm/modules: the release library's, its own)
        with parsed:
            write_binary_output(path, _release_code(parsed, opt, {}))
        return
    data = release_object(ll_text, opt)
    if data is not None:
        write_binary_output(path, data)
        return
    module = parsed if parsed is not None else _parse(ll_text)
    tm = target_machine(opt=opt)
    try:
        data = tm.emit_object(module)
    except RuntimeError as exc:
        raise RuntimeError(f"LLVM could not emit an object file: {exc}") from exc
    write_binary_output(path, data)


def release_object(ll_text: str, opt: int, *, jit: bool = False) -> bytes | None:
    """:func:`emit_object`'s code generation in LLVM's release library
    (:mod:`zymase.llvm.libllvm`); None without it or when the text does not parse there.
    ``jit``: for this machine's CPU, in the JIT's relocation and code model
    (:func:`target_machine`)."""
    from zymase.llvm import libllvm
    from zymase.llvm.modules import host_cpu, host_data_layout, host_triple

    if not libllvm.available():
        return None
    target = {}
    if jit:
        cpu, features = host_cpu()
        target = {"cpu": cpu, "features": features, "reloc": "static", "code_model": "jitdefault"}
    try:
        module = libllvm.Module(ll_text, triple=host_triple(), data_layout=host_data_layout())
    except libllvm.LLVMError:
        return None
    with module:
        return _release_code(module, opt, target)


def _release_code(module, opt: int, target: dict) -> bytes:
    from zymase.llvm import libllvm

    try:
        return module.emit_object(opt=opt, **target)
    except libllvm.LLVMError as exc:
        report = str(exc)
        if "<inline asm>" in report:  # the program's own assembly: clang -c says the same
            first = report.split("; ")[0].strip()
            function, location = _inline_asm_site(module.text(), first)
            raise ZymaseError(f"inline assembly does not assemble: {first}", function=function, location=location,
                              hint="the asm statement's text is passed to the assembler as written; "
                                   "clang -c on the same file reports it too") from None
        raise RuntimeError(f"LLVM could not emit an object file: {exc}") from exc


def _inline_asm_site(ll_text: str, report: str) -> tuple[str | None, str | None]:
    """The function whose ``asm`` statement the assembler's ``report`` is about (the first
    whose template starts with the reported line's mnemonic), and its source line when
    the module has line tables (``file:line``); None for what is not found."""
    lines = [l.strip() for l in report.splitlines() if l.strip()]
    mnemonic = lines[1].split()[0] if len(lines) > 1 and lines[1].split() else None
    if mnemonic is None:
        return None, None
    function = None
    for line in ll_text.split("\n"):
        if line.startswith("define "):
            m = re.search(r'@("?)([^"(]+)\1\(', line)
            function = m.group(2) if m else None
        elif function and re.search(r'\basm\b[^"]*"\s*' + re.escape(mnemonic) + r"\b", line):
            from zymase.llvm.demangle import demangle

            location = None
            dbg = re.search(r"!dbg (![0-9]+)", line)
            if dbg:
                loc = re.search(r"^" + re.escape(dbg.group(1)) + r" = !DILocation\(line: (\d+)", ll_text, re.M)
                files = re.findall(r'!DIFile\(filename: "([^"]+)"', ll_text)
                if loc:
                    location = f"{files[0] if files else 'line'}:{loc.group(1)}" if files else f"line {loc.group(1)}"
            return demangle(function), location
    return None, None


def write_binary_output(path: str | Path, data: bytes) -> None:
    """Write an object file; a missing directory or a read-only place is a ZymaseError."""
    try:
        Path(path).write_bytes(data)
    except OSError as exc:
        raise ZymaseError(
            f"cannot write object file {path}: {exc.strerror}",
            hint="check that the output directory exists and is writable",
        ) from None


def write_text_output(path: str | Path, text: str) -> None:
    """Write an output text file (LLVM IR, MLIR); a missing directory or a read-only
    place is a ZymaseError."""
    try:
        Path(path).write_text(text)
    except OSError as exc:
        raise ZymaseError(f"cannot write '{path}': {exc.strerror}",
                          hint="check that the output directory exists and is writable") from None


def _linker() -> list[str]:
    cc = shutil.which("cc")
    if cc:
        return [cc]
    try:
        return list(find_clang().argv)
    except ZymaseError:
        raise ZymaseError(
            "no linker found: neither 'cc' nor a clang is on PATH",
            hint="apt-get install -y gcc (or clang-19)",
        ) from None


def link(objects: list[str | Path], output: str | Path, flags: list[str] | None = None) -> None:
    """Link object files into an executable with the system ``cc`` (and ``-lm``).

    ``flags`` carries the user's ``-l``/``-L``/``-static``/... link options.
    """
    flags = flags or []
    # clang's OpenMP code calls LLVM's runtime (__kmpc_*), which only clang's own
    # -fopenmp links (cc would link GCC's libgomp)
    openmp = any(f.startswith("-fopenmp") for f in flags)
    argv = [
        *(find_clang().argv if openmp else _linker()),
        *(str(o) for o in objects),
        "-o",
        str(output),
        *flags,
        "-lm",
    ]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise ZymaseError(f"could not run the linker: {exc}") from None
    if proc.returncode != 0:
        lines = [line.strip() for line in proc.stderr.splitlines() if line.strip()]
        undefined = [line for line in lines if "undefined reference" in line]
        specific = [line for line in lines if not line.startswith(("collect2", "clang"))]
        first = (undefined or specific or lines or ["linker failed without a message"])[0]
        hint = "check the -l/-L flags and that every called function is defined"
        if "__enzyme_" in first:
            hint = (
                "an __enzyme_* call was not replaced by a derivative; check the call's "
                "arguments"
            )
        raise ZymaseError(f"linking failed: {first}", hint=hint)


__all__ = [
    "Clang",
    "ENZYME_ATTRIBUTES_HEADER",
    "INCLUDE_DIR",
    "MAX_CLANG",
    "MIN_CLANG",
    "c_to_llvm_ir",
    "compiles_cxx",
    "emit_object",
    "find_clang",
    "is_cxx_source",
    "link",
    "optimize",
    "preopt",
    "target_machine",
    "write_binary_output",
    "write_text_output",
]
