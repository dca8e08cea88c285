"""C front end: the ``zymase cc`` pipeline, timed phase by phase.

clang (IR, no LLVM passes) -> pre-AD pipeline -> read into xDSL -> Enzyme call sites
-> differentiate -> lower tape ops -> write LLVM IR -> full O-level pipeline ->
object file -> link.

With the derivative cache (:mod:`zymase.cache`, on unless ``--no-cache``), clang's IR
and the build options are hashed first; a hit skips everything from the pre-AD pipeline
to the object file (the xDSL engine is not even imported). On a miss, the differentiated
part (after the pre-AD pipeline) is looked up in its turn: a file changed only where no
derivative reaches is not differentiated again.
"""

from __future__ import annotations

import re
import resource
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from zymase.errors import CompilerDiagnostics, ZymaseError

if TYPE_CHECKING:  # the engine's IR (xDSL) is imported only when a build differentiates
    from zymase.ir import ModuleOp


def process_cpu_seconds() -> float:
    """CPU seconds of this process (every thread) and of its finished child processes
    (clang, the linker)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class Timings:
    """Wall and CPU time per phase, in seconds (printed by ``zymase cc --time``). CPU
    time is the process's and its children's: on a shared machine it is the less noisy
    of the two."""

    phases: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    #: what the derivative cache did per source: "hit", "miss" (then stored) or "off"; after
    #: a miss, "part hit" / "part miss" for the differentiated part's derivative IR
    cache: list[str] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str):
        t0, c0 = time.perf_counter(), process_cpu_seconds()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - t0
            self.cpu[name] = self.cpu.get(name, 0.0) + process_cpu_seconds() - c0

    def report(self) -> str:
        """One row per phase (wall, CPU), then ``other``: the process's CPU outside the
        phases (starting Python, importing zymase, xDSL and LLVM where no phase does)."""
        rows = [f"  {k:<10} {v * 1000:9.1f} ms {self.cpu.get(k, 0.0) * 1000:9.1f} ms CPU"
                for k, v in self.phases.items()]
        other = process_cpu_seconds() - sum(self.cpu.values())
        rows.append(f"  {'other':<10} {'':>12} {other * 1000:9.1f} ms CPU")
        total = f"  {'total':<10} {sum(self.phases.values()) * 1000:9.1f} ms {process_cpu_seconds() * 1000:9.1f} ms CPU"
        cache = f"\n  derivative cache: {', '.join(self.cache)}" if self.cache else ""
        return "zymase: time per phase (wall, CPU)\n" + "\n".join(rows) + "\n" + total + cache


def differentiate_llvm_ir(ll_text: str, filename: str, level: int, timings: Timings, *, preoptimize: bool = True,
                          only_reachable: bool = False, cache: bool = False) -> str:
    """LLVM IR in, LLVM IR with every Enzyme call site differentiated out (not yet
    optimized after AD). ``only_reachable``: import and differentiate only the part of the
    module the derivatives need (:mod:`zymase.llvm.reachable`); the rest keeps its IR.
    ``cache``: the differentiated part's derivative IR is kept in the derivative cache,
    keyed by that part's text after the pre-AD pipeline (a change elsewhere in the module
    does not differentiate again)."""
    return _differentiate(ll_text, filename, level, timings, preoptimize=preoptimize,
                          only_reachable=only_reachable, cache=cache)[0]


def _differentiate(ll_text: str, filename: str, level: int, timings: Timings, *, preoptimize: bool,
                   only_reachable: bool, cache: bool,
                   when_split: Callable[[], None] | None = None,
                   skip_outside_part: bool = False) -> tuple[str, frozenset[str] | None]:
    """:func:`differentiate_llvm_ir`, and the functions of the module AD changed (None when
    the whole module was imported: then any function may have changed). ``when_split`` is
    called once the module is known to split (before the part is differentiated).
    ``skip_outside_part``: the pre-AD pipeline skips the functions outside the
    differentiated part (``llvm/preopt_skip``; for a caller that gives every function the
    post-AD pipeline or clang's code)."""
    from zymase import cache as derivative_cache
    from zymase.autodiff.semantics import strong_zero
    from zymase.llvm import preopt_skip, toolchain
    from zymase.llvm.modules import canonical as canonical_text
    from zymase.llvm.pre_ad_marks import protect_annotated_functions, protect_marker_calls
    from zymase.llvm.reachable import changed_functions, differentiated_part, merge

    if preoptimize:
        with timings.phase("preopt"):
            ll_text = protect_annotated_functions(protect_marker_calls(ll_text))
            if skip_outside_part and level > 0:
                # (no derivative reaches them: llvm/preopt_skip)
                ll_text, skipped = preopt_skip.skip_outside_part(ll_text)
            ll_text = toolchain.preopt(ll_text, level)
            if skip_outside_part and level > 0 and skipped:
                ll_text = preopt_skip.unskip(ll_text)
    part = None
    if only_reachable:
        with timings.phase("split"):
            # the split reads LLVM's printed form, which preopt returns and clang's text may not be
            try:
                canonical = ll_text if preoptimize else canonical_text(ll_text)
            except ZymaseError:
                canonical = None  # malformed: the reader reports it, naming the file
            part = differentiated_part(canonical) if canonical is not None else None
    if part is not None and when_split is not None:
        when_split()
    text = part.text if part else ll_text
    out = key = None
    if cache:
        with timings.phase("cache"):
            key = derivative_cache.make_key(f"derivative part level={level} strong_zero={strong_zero()}", text)
            stored = derivative_cache.load(key, "ad.ll")
        out = stored.decode() if stored is not None else None
        timings.cache.append("part hit" if out is not None else "part miss")
    if out is None:
        out = _import_differentiate_export(text, filename, timings, mark_unchanged=part is not None)
        if key is not None:
            with timings.phase("cache"):
                derivative_cache.store(key, "ad.ll", out.encode())
    if part is None:
        return out, None
    with timings.phase("merge"):
        return merge(part, out), changed_functions(part, out)


def _import_differentiate_export(ll_text: str, filename: str, timings: Timings, *,
                                 mark_unchanged: bool = False) -> str:
    """``mark_unchanged``: the text starts with the line naming the functions AD left as
    they were (``llvm/reachable.UNCHANGED_HEADER``), for which ``merge`` keeps the original."""
    from zymase.autodiff.rounded_partials import vectorizable_barriers
    from zymase.ir.xdsl_import import importing_xdsl
    from zymase.llvm.reachable import UNCHANGED_HEADER, unchanged_functions

    # the engine's modules are imported on first use in here: inside the window their
    # dataclasses' methods come compiled, as xDSL's do (zymase/ir/xdsl_import.py)
    with importing_xdsl():
        from zymase.llvm.reader import read_llvm_ir
        from zymase.llvm.writer import write_llvm_ir

        with timings.phase("import"):
            module = read_llvm_ir(ll_text, filename)
        before = None
        if mark_unchanged:
            with timings.phase("export"):
                before = write_llvm_ir(module)
        with timings.phase("AD"):
            # the post-AD pipeline (toolchain.optimize) turns them into fences again; a
            # module with canonicalize calls of its own keeps the fences
            with vectorizable_barriers("@llvm.canonicalize." not in ll_text):
                differentiate_module(module)
        with timings.phase("export"):
            text = write_llvm_ir(module)
            header = "" if before is None else f"{UNCHANGED_HEADER} {' '.join(unchanged_functions(before, text))}\n"
    return header + link_derivative_runtime(text, timings)


def link_derivative_runtime(ll_text: str, timings: Timings) -> str:
    """The derivatives of BLAS and MPI calls and of checkpointed loops call C code of
    zymase's (autodiff/rules/blas.py, mpi.py, autodiff/checkpoint.py): linked into the
    module when they do."""
    from zymase.autodiff import checkpoint
    from zymase.autodiff.rules import blas, mpi
    from zymase.llvm import toolchain

    for runtime in (blas, mpi, checkpoint):
        if f"@{runtime.RUNTIME_PREFIX}" in ll_text:
            with timings.phase("runtime"):
                ll_text = toolchain.link_c_runtime(ll_text, runtime.RUNTIME_SOURCE, runtime.RUNTIME_PREFIX)
    return ll_text


def differentiate_module(module: ModuleOp) -> int:
    """Enzyme's annotations read, marker lowering (in rounds, for nested
    differentiation), the enzyme pass and tape lowering on an llvm-dialect module."""
    from zymase.autodiff.semantics import generating_inner_derivatives
    from zymase.llvm.annotations import apply_annotations
    from zymase.llvm.markers import finish_markers, lower_sites, marker_rounds
    from zymase.transforms.alias_scopes import annotate_alias_scopes
    from zymase.ir import llvm
    from zymase.transforms.dead_primal_stores import remove_dead_primal_stores
    from zymase.transforms.enzyme_pass import run_enzyme_pass
    from zymase.transforms.exceptions import call_marker_invokes, guard_derivatives, uses_exceptions
    from zymase.transforms.lower_to_llvm import lower_to_llvm
    from zymase.transforms.numba_parfor import outline_parfors, restore_parfors
    from zymase.transforms.openmp import outline_parallel_regions, restore_parallel_regions
    from zymase.autodiff.driver import LAPLACE_PREFIX
    from zymase.transforms.broadcast_strides import stride_broadcast_indices
    from zymase.transforms.strong_zero_versioning import version_invariant_guards

    apply_annotations(module)
    call_marker_invokes(module)
    rounds = marker_rounds(module)
    if rounds:
        from zymase.transforms.constant_callees import specialize_constant_callees
        from zymase.transforms.known_callees import resolve_known_callees

        resolve_known_callees(module)
        user_functions = {op.sym_name.data for op in module.body.block.ops if isinstance(op, llvm.FuncOp)}
        # nested differentiation: the inner derivatives exist as ordinary llvm code
        # before the functions calling them are differentiated
        for k, sites in enumerate(rounds):
            lower_sites(module, sites)
            # OpenMP fork calls are direct calls of their regions while AD runs
            outline_parallel_regions(module)
            # and so are Numba's prange loops (numba_parallel_for calls)
            outline_parfors(module)
            specialize_constant_callees(module)
            with generating_inner_derivatives(k < len(rounds) - 1):
                run_enzyme_pass(module)
                restore_parallel_regions(module)
                restore_parfors(module)
                # (their tapes too: lower_tape.HEAP_CACHE_STRUCT)
                lower_to_llvm(module)
            version_invariant_guards(module)
        if (personality := uses_exceptions(module)) is not None:
            guard_derivatives(module, user_functions, personality)
        finish_markers(module)
        remove_dead_primal_stores(module)
        # the element loops of Laplacian-mode derivatives, for the loop vectorizer
        stride_broadcast_indices(module, LAPLACE_PREFIX)
        annotate_alias_scopes(module)
    else:
        finish_markers(module)
    return sum(map(len, rounds))


def compile_c(source: str, clang_flags: list[str], level: int, timings: Timings, *, preopt: bool = True,
              cache: bool = True) -> tuple[str, str | None]:
    """One C file to optimized LLVM IR text with derivatives, and the cache key of that
    result (None without the cache). ``preopt=False`` is Enzyme's "AD before
    optimization" baseline: the unoptimized IR is differentiated and only the result is
    optimized."""
    from zymase import cache as derivative_cache
    from zymase.llvm import toolchain

    cache = cache and derivative_cache.enabled()
    seen_key = _seen_source_key(source, clang_flags, level, preopt) if cache else None
    seen = seen_key is not None and derivative_cache.load(seen_key, "seen") is not None
    # a build the cache serves does not need the engine: it is imported while clang runs
    # unless the cache has seen this source as it is now
    imports = None if seen else _engine_imports()
    try:
        with timings.phase("clang"):
            # the key hashes clang's own text: dropping the target features LLVM does not
            # know loads LLVM, which a hit does without
            ll = toolchain.c_to_llvm_ir(source, clang_flags, level, known_features_only=False,
                                        meanwhile=imports or iter(()))
    finally:
        if imports is not None:
            imports.close()
    ll, key = _compile_clang_ir(ll, str(source), clang_flags, level, timings, preopt=preopt, cache=cache,
                                locate=lambda err: _with_source_line(err, source, clang_flags, level, preopt))
    if seen_key is not None and not seen:
        derivative_cache.store(seen_key, "seen", b"")
    return ll, key


#: what a build that differentiates imports after clang's front end, the largest first
#: (``zymase.ir``: xDSL's dialects, about 0.25 s); :func:`_engine_imports` takes them in
#: this order
ENGINE_MODULES = (
    "zymase.ir", "zymase.llvm.reader", "zymase.llvm.writer", "zymase.llvm.markers",
    "zymase.transforms.enzyme_pass", "zymase.autodiff.driver", "zymase.transforms.lower_to_llvm",
    "zymase.transforms.exceptions", "zymase.transforms.alias_scopes", "zymase.transforms.dead_primal_stores",
    "zymase.transforms.known_callees", "zymase.transforms.constant_callees", "zymase.transforms.split_mode",
    "zymase.transforms.peel", "zymase.transforms.vector_lanes", "zymase.autodiff.refusals",
    "zymase.analysis.types", "zymase.llvm.clang_primal", "zymase.llvm.preopt_skip", "zymase.llvm.reachable",
)


def _engine_imports():
    """The engine's modules imported one per step (:data:`ENGINE_MODULES`), and LLVM's
    library loaded, while clang's front end runs (``toolchain.c_to_llvm_ir(meanwhile=)``):
    clang leaves this process idle for about as long as the imports take on the bench
    workloads (0.2-0.3 s on hand). What is not imported when clang ends is imported where
    it is first used, as it would have been."""
    import importlib

    from zymase.ir.xdsl_import import importing_xdsl  # (imports zymase.ir)

    yield
    from zymase.llvm import libllvm

    libllvm.available()
    yield
    # as frontends/c imports the engine: inside the window (ir/xdsl_import)
    with importing_xdsl():
        for name in ENGINE_MODULES:
            importlib.import_module(name)
            yield


def _seen_source_key(source: str, clang_flags: list[str], level: int, preopt: bool) -> str | None:
    """The cache entry that marks a source as built before: the same file, unchanged on
    disk (path, size, modification time), built with the same options by this engine, which
    then stored or found its derivatives in the cache. For :func:`compile_c`'s guess only
    (whether to import the engine while clang runs): a wrong guess costs time, never a
    result, as the cache's own key (clang's IR) decides what is served."""
    from zymase import cache as derivative_cache

    try:
        stat = Path(source).stat()
    except OSError:
        return None
    return derivative_cache.make_key("cc source seen", str(Path(source).resolve()),
                                     f"{stat.st_mtime_ns} {stat.st_size}", repr(clang_flags), str(level), str(preopt))


def compile_linked(sources: list[str], clang_flags: list[str], level: int, timings: Timings, *,
                   preopt: bool = True, cache: bool = True) -> tuple[str, str | None]:
    """Several C/C++ files as one module, differentiated as one program: what Enzyme's
    users get from link-time optimization, for a function differentiated in one file and
    defined (or calling functions defined) in another. :func:`build` comes here only when
    a file alone is refused. Line tables are always on (each file would otherwise be
    compiled again to locate a refusal); clang's own pipeline does not give the primal
    (``llvm/clang_primal``: clang 19 does not read the IR LLVM 22 prints after linking),
    so the functions AD leaves unchanged are zymase's optimization of them."""
    from zymase.llvm import toolchain

    lines = [] if any(f.startswith("-g") for f in clang_flags) else ["-gline-tables-only"]
    with timings.phase("clang"):
        texts = [toolchain.drop_unknown_target_features(toolchain.c_to_llvm_ir(src, [*clang_flags, *lines], level))
                 for src in sources]
    with timings.phase("link"):
        ll = texts[0]
        for src, text in zip(sources[1:], texts[1:]):
            try:
                ll = toolchain.link_modules(ll, text)
            except ZymaseError as err:
                raise ZymaseError(
                    f"the files cannot be linked into one program to differentiate it: {err.message.split(': ', 1)[-1]}",
                    location=src,
                    hint="each symbol may be defined in one file only (mark helpers static or inline)",
                ) from None
    return _compile_clang_ir(ll, " + ".join(Path(src).name for src in sources), clang_flags, level, timings,
                             preopt=preopt, cache=cache, locate=lambda err: err, clang_primal=False)


def _compile_clang_ir(ll: str, label: str, clang_flags: list[str], level: int, timings: Timings, *, preopt: bool,
                      cache: bool, locate, clang_primal: bool = True) -> tuple[str, str | None]:
    """Clang's IR of one file (or of linked files, :func:`compile_linked`) to optimized
    LLVM IR with derivatives, and the cache key; ``locate`` gives a refusal its source
    line; ``clang_primal``: clang's own pipeline gives the functions AD leaves unchanged."""
    from zymase import cache as derivative_cache
    from zymase.llvm import toolchain
    from zymase.llvm.clang_primal import ClangPipeline, hide_roots, take_clang_functions

    key = None
    if cache and derivative_cache.enabled():
        with timings.phase("cache"):
            key = build_key(ll, clang_flags, level, preopt)
            cached = derivative_cache.load(key, "ll")
        if cached is not None:
            timings.cache.append("hit")
            return cached.decode(), key
        timings.cache.append("miss")
    else:
        timings.cache.append("off")
    with timings.phase("clang"):
        clang_ir, ll = ll, toolchain.drop_unknown_target_features(ll)
    source_ir = ll
    # clang's own pipeline on the same IR, in a child process while zymase differentiates:
    # the functions AD leaves as they were are taken from it (llvm/clang_primal); only
    # when the module splits (else every function counts as changed)
    clang_pipeline: list[ClangPipeline] = []

    def start_clang_pipeline() -> None:
        if level > 0 and clang_primal:
            with timings.phase("primal"):
                clang_pipeline.append(ClangPipeline(clang_ir, clang_flags, level))

    try:
        try:
            ll, changed = _differentiate(ll, label, level, timings, preoptimize=preopt, only_reachable=True,
                                         cache=key is not None, when_split=start_clang_pipeline,
                                         skip_outside_part=True)
        except ZymaseError as err:
            raise _in_cxx_terms(locate(err)) from None
        clang_ll, hidden, merged = None, frozenset(), ll
        if clang_pipeline and changed is not None:
            with timings.phase("primal"):
                clang_ll = clang_pipeline[0].result()
                if clang_ll is not None:
                    # the roots no function of zymase's reaches are declarations while
                    # LLVM 22 optimizes: clang's definitions replace them
                    ll, hidden = hide_roots(ll, clang_ll, source_ir, set(changed))
        with timings.phase("optimize"):
            ll = toolchain.optimize(ll, level)
        if clang_ll is not None:
            with timings.phase("primal"):
                ll, roots = take_clang_functions(ll, clang_ll, source_ir, set(changed), hidden)
            if not hidden <= roots:  # the link failed: zymase's own code for every function
                with timings.phase("optimize"):
                    ll = toolchain.optimize(merged, level)
    finally:
        for pipeline in clang_pipeline:
            pipeline.cancel()
    if key is not None:
        with timings.phase("cache"):
            derivative_cache.store(key, "ll", ll.encode())
    return ll, key


def build_key(ll_text: str, clang_flags: list[str], level: int, preopt: bool) -> str:
    """The cache key of one source's build: clang's IR (before any LLVM pass, as clang
    wrote it; the pre-AD pipeline is a function of it, so it is not run to compute the key), the clang flags,
    the level, ``--no-preopt`` and the derivative semantics (strong zeros or not)."""
    from zymase import cache as derivative_cache
    from zymase.autodiff.semantics import strong_zero

    # (primal=clang: the functions AD leaves unchanged are clang's, llvm/clang_primal)
    options = f"cc level={level} preopt={preopt} strong_zero={strong_zero()} flags={clang_flags!r} primal=clang"
    return derivative_cache.make_key(options, ll_text)


def _with_source_line(err: ZymaseError, source: str, clang_flags: list[str], level: int,
                      preopt: bool) -> ZymaseError:
    """``err`` with the source line of the construct it names. Without ``-g`` the IR has
    no line numbers, so the file is compiled once more with line tables only (which do
    not change the code) to find it; if that build fails differently, ``err`` stands."""
    from zymase.llvm import toolchain

    has_debug_info = any(f.startswith("-g") for f in clang_flags)
    if _names_source_line(err) or isinstance(err, CompilerDiagnostics) or has_debug_info:
        return err
    try:
        ll = toolchain.c_to_llvm_ir(source, [*clang_flags, "-gline-tables-only"], level)
        # as the build ran it: the functions outside the part skip the pre-AD pipeline, so
        # a helper taking the function as a pointer is not inlined into its callers (and
        # resolved) here either
        _differentiate(ll, str(source), level, Timings(), preoptimize=preopt, only_reachable=True, cache=False,
                       skip_outside_part=True)
    except ZymaseError as located:
        # the same refusal (its text may now name further lines, so compare the place)
        if _names_source_line(located) and located.function == err.function:
            return located
    return err


_MANGLED_RE = re.compile(r"(?<![\w.$])_Z[\w.$]+")


def _in_cxx_terms(err: ZymaseError) -> ZymaseError:
    """``err`` with C++ names demangled (``_Z6shapesd`` -> ``shapes(double)``), as the user
    wrote them; C names never start with ``_Z`` (a reserved spelling)."""
    from zymase.llvm.demangle import demangle

    def plain(text: str | None) -> str | None:
        return _MANGLED_RE.sub(lambda m: demangle(m.group(0)), text) if text else text

    if not isinstance(err, CompilerDiagnostics):
        err.message, err.construct, err.function, err.hint = (
            plain(err.message), plain(err.construct), plain(err.function), plain(err.hint))
    return err


def _names_source_line(err: ZymaseError) -> bool:
    # the reader's errors without debug info point into the IR: "f.c (LLVM IR line 8)"
    return bool(err.location) and "LLVM IR line" not in err.location


def build(sources: list[str], output: str, clang_flags: list[str], link_flags: list[str], level: int,
          timings: Timings, *, compile_only: bool = False, emit_llvm: bool = False, preopt: bool = True,
          cache: bool = True) -> None:
    """``zymase cc``: compile and link (or ``-c`` / ``-S -emit-llvm``). ``cache``: use the
    derivative cache (the object file is cached beside the IR, under the same key)."""
    from zymase import cache as derivative_cache
    from zymase.llvm import toolchain

    files = [src for src in sources if not src.endswith((".o", ".a", ".so"))]
    with tempfile.TemporaryDirectory(prefix="zymase-") as tmp:
        object_of = {src: src for src in sources if src not in files}  # the link keeps the given order
        built: list[tuple[str, str, str | None]] = []  # (source, IR, cache key)
        try:
            for src in files:
                built.append((src, *compile_c(src, clang_flags, level, timings, preopt=preopt, cache=cache)))
        except CompilerDiagnostics:
            raise
        except ZymaseError:
            # a function differentiated in one file and defined in another (or calling one
            # defined in another): the files of one program are differentiated together
            if len(files) < 2 or compile_only or emit_llvm:
                raise
            built = [(files[0], *compile_linked(files, clang_flags, level, timings, preopt=preopt, cache=cache))]
        for i, (src, ll, key) in enumerate(built):
            if emit_llvm:
                toolchain.write_text_output(output or Path(src).with_suffix(".ll").name, ll)
                continue
            obj = output if compile_only and output else str(Path(tmp) / f"{i}_{Path(src).stem}.o")
            if compile_only and not output:
                obj = Path(src).with_suffix(".o").name
            cached = None
            if key is not None:
                with timings.phase("cache"):
                    cached = derivative_cache.load(key, "o")
                    if cached is not None:
                        toolchain.write_binary_output(obj, cached)
            if cached is None:
                with timings.phase("codegen"):
                    toolchain.emit_object(ll, obj, opt=level)
                if key is not None:
                    derivative_cache.store(key, "o", Path(obj).read_bytes())
            object_of[src] = obj
        if compile_only or emit_llvm:
            return
        objects = [object_of[src] for src in sources if src in object_of]
        if toolchain.compiles_cxx(clang_flags) or any(toolchain.is_cxx_source(src) for src in sources):
            # `cc` links C: a C++ source's operator new/delete, std:: and the C++ ABI
            # live in libstdc++ (clang++ would add it itself)
            link_flags = [*link_flags, "-lstdc++"]
        with timings.phase("link"):
            toolchain.link(objects, output or "a.out", link_flags)
