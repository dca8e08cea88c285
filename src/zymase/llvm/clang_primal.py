"""Primal parity: the functions AD leaves as they were come out of clang's own pipeline.

``zymase cc`` optimizes its module with llvmlite's LLVM, which is not the LLVM of the clang
that compiled the source, and the two do not make the same code of the same function
(issue 29 item 0: LLVM 22 folds the ODE workload's boundary reads ``i > 0 ? u[i-1] : u[i]``
into a load from a select of pointers, which the loop vectorizer cannot bound; clang-19
keeps a select of indices and vectorizes). Enzyme's users get clang's code for everything
around the derivatives; so do zymase's: clang's pipeline runs on clang's IR (the same IR the
pre-AD pipeline starts from, ``-x ir``, so without a second front-end run) while zymase
differentiates, and after the post-AD pipeline :func:`take_clang_functions` puts clang's
optimized definitions of the functions AD did not change in place of zymase's, with LLVM's
linker. Nothing optimizes them again (LLVM 22 would fold the selects anew); code generation
is llvmlite's.

What is taken (the *roots*): every function with external linkage that clang's module
defines and that AD did not change (outside the differentiated part, or listed as unchanged
by ``llvm/reachable.unchanged_functions``), with the local functions and globals clang's
definitions use (renamed by the linker where zymase's module has the same names: two
copies). A root is declined, and zymase's definition stays, when

* clang's definition (or a local function it uses) names an ``__enzyme_*`` marker: clang
  inlined a function that AD changed;
* it uses a local function AD changed other than by its address (the link joins such a
  function to zymase's definition, which is sound only where clang could not specialize it
  for its callers: an address-taken function keeps its signature and its calls' facts);
* a local symbol whose identity matters (a writable global, a constant or function whose
  address is significant: ``unnamed_addr`` neither in the source's IR nor in clang's
  optimized module, whose global optimizer marks what no one compares) is used, in the
  source's IR, both from the
  root and from what stays zymase's: two copies would split one object. The uses are
  those of the source's IR, transitively through callees and global initializers, as
  either pipeline may have inlined any callee.

Declining is repeated until no root uses what another declined root shares. External
globals stay zymase's definitions (the taken functions use them by name).
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from zymase.errors import ZymaseError
from zymase.llvm.reachable import _REF, _declaration, _functions

#: linkages of symbols local to a module (copied, not joined, when modules are linked)
_LOCAL = {"internal", "private"}
#: ``@name(`` or ``@name`` followed by something else: a call's callee or the symbol as a value
_USE = re.compile(r"@([-a-zA-Z$._][-a-zA-Z$._0-9]*|\d+)(\(?)")
_MARKER = "__enzyme"
#: what keeps the changed local functions hidden roots use alive while LLVM 22 optimizes
_KEPT = "@llvm.compiler.used"
_KEPT_LINE = re.compile(r"^@llvm\.compiler\.used = .*$", re.M)


@dataclass
class _Symbols:
    """The functions and globals one module's text defines: references and properties."""

    refs: dict[str, set[str]]  # per function (body) and global (initializer)
    functions: set[str]
    local: set[str]
    #: local symbols whose identity matters (see the module doc)
    significant: set[str]
    external_functions: set[str]
    #: functions used other than as a call's callee
    address_taken: set[str]
    #: local symbols marked ``unnamed_addr`` (their address is not significant) and local
    #: writable globals
    unnamed: set[str]
    writable: set[str]


@functools.lru_cache(maxsize=4)
def _symbols(text: str) -> _Symbols:
    """The symbols of ``text``, read once per text (:func:`hide_roots` and :func:`_take` read
    the same source and clang texts): callers share the result and never change it."""
    functions, globals_ = _functions(text)
    lines = text.split("\n")
    refs: dict[str, set[str]] = {}
    local, significant, external, unnamed, writable = set(), set(), set(), set(), set()
    address_taken = {name for name, call in _USE.findall(text) if not call}
    for name, (a, b) in functions.items():
        refs[name] = set(_REF.findall("\n".join(lines[a + 1:b + 1])))
        header = lines[a][: lines[a].index(f"@{name}(")].split()
        if _LOCAL & set(header):
            local.add(name)
            if " unnamed_addr " in lines[a]:
                unnamed.add(name)
            elif name in address_taken:
                significant.add(name)
        elif not {"linkonce", "linkonce_odr", "weak", "weak_odr", "available_externally", "common"} & set(header):
            external.add(name)
    for name, rest in globals_.items():
        words = rest.split()
        refs[name] = set(_REF.findall(rest))
        if words[0] in _LOCAL:  # the printed form starts with the linkage
            local.add(name)
            # writable, or a constant whose address may be compared (a string in the
            # initializer may hold either word: then it counts as significant)
            if "global" in words:
                writable.add(name)
            if "unnamed_addr" in words:
                unnamed.add(name)
            if "global" in words or "unnamed_addr" not in words:
                significant.add(name)
    return _Symbols(refs, set(functions), local, significant, external, address_taken, unnamed, writable)


def _reach(roots, refs: dict[str, set[str]], stop=frozenset()) -> set[str]:
    """Every symbol ``roots`` use, transitively through function bodies and global
    initializers, not looking into ``stop``."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in stop:
            todo.extend(refs.get(name, ()))
    return seen


def choose_roots(source: str, clang_text: str, changed: set[str], zymase_functions: set[str]) -> set[str]:
    """The functions :func:`take_clang_functions` takes from ``clang_text`` (clang's optimized
    module): ``source`` is the IR both pipelines started from, ``changed`` the functions AD
    changed, ``zymase_functions`` the functions zymase's optimized module defines."""
    src, cl = _symbols(source), _symbols(clang_text)
    # clang's pipeline marks a local constant or function ``unnamed_addr`` when nothing in the
    # whole program compares its address (the derivatives compare only what the source does)
    significant = {n for n in src.significant if n in src.writable or n not in cl.unnamed}
    roots = {f for f in src.external_functions & cl.external_functions if f not in changed}
    for root in list(roots):
        # clang's definition and the local code it brings along (a changed function it
        # uses is joined to zymase's, not brought: the marker call in it does not count)
        brought = _reach([root], cl.refs, stop=(set(cl.refs) - cl.local - {root}) | changed)
        if any(_MARKER in n for n in brought):
            roots.discard(root)
            continue
        joined = (brought & changed & cl.local) - {root}
        if any(f not in src.address_taken or f not in zymase_functions for f in joined):
            roots.discard(root)  # a changed local function clang may have specialized
    while True:
        # what stays zymase's: the functions not taken but the local ones, which are
        # zymase's only where those use them, and the external globals' initializers
        stay = (set(src.refs) - src.local - roots) | changed
        zymase_uses = _reach(stay, src.refs)
        # (the changed functions a root uses are joined, not copied; what they use counts,
        # for a changed function without a marker call clang may have inlined)
        shared = {r for r in roots if (_reach([r], src.refs) - changed) & zymase_uses & significant}
        if not shared:
            return roots
        roots -= shared


def hide_roots(merged: str, clang_text: str, source: str, changed: set[str]) -> tuple[str, frozenset[str]]:
    """``merged`` (zymase's module before the post-AD pipeline) with the roots that no
    function staying zymase's reaches (by a call, its address, or through a global's
    initializer) made declarations, and those roots: the post-AD pipeline would optimize
    them only for :func:`take_clang_functions` to throw them away. A root a staying
    function reaches keeps its definition there, to be inlined."""
    functions, _ = _functions(merged)
    roots = choose_roots(source, clang_text, changed, set(functions)) & set(functions)
    if not roots:
        return merged, frozenset()
    symbols = _symbols(merged)
    # (a local function is zymase's only where what stays zymase's uses it)
    staying = (set(functions) - symbols.local - roots) | (changed & set(functions))
    hidden = roots - _reach(staying, symbols.refs)
    if not hidden:
        return merged, frozenset()
    # the changed local functions clang's definitions use are joined to zymase's
    # (take_clang_functions): kept, unspecialized, while nothing of zymase's calls them
    joined = sorted(f for f in _reach(hidden, symbols.refs, stop=changed) & changed if f in symbols.local)
    # zymase's local functions only the hidden roots used go (clang's are linked in)
    used = _reach((set(symbols.refs) - symbols.local - hidden) | set(joined), symbols.refs)
    dead = {f for f in functions if f in symbols.local and f not in used}
    lines = merged.split("\n")
    out: list[str] = []
    start = 0
    for name, (a, b) in sorted(((f, functions[f]) for f in hidden | dead), key=lambda x: x[1]):
        out.extend(lines[start:a])
        if name in hidden:
            out.append(_declaration(lines[a]))
        start = b + 1
    out.extend(lines[start:])
    if joined:
        out.append(f"{_KEPT} = appending global [{len(joined)} x ptr] [{', '.join(f'ptr @{f}' for f in joined)}], "
                   'section "llvm.metadata"')
    return "\n".join(out), frozenset(hidden)


def take_clang_functions(optimized: str, clang_text: str, source: str, changed: set[str],
                         hidden: frozenset[str] = frozenset()) -> tuple[str, set[str]]:
    """``optimized`` (zymase's module after the post-AD pipeline) with the definitions of the
    roots (module doc) taken from ``clang_text``; and the roots. ``hidden``: the roots
    :func:`hide_roots` made declarations (the roots returned hold them unless the link
    failed)."""
    try:
        return _take(optimized, clang_text, source, changed, hidden)
    except (ZymaseError, RuntimeError):
        # clang's module unreadable by llvmlite's LLVM, or a link LLVM refuses: zymase's
        # own definitions stay (the primal slower than clang's, never wrong)
        return optimized, set()


def _take(optimized: str, clang_text: str, source: str, changed: set[str],
          hidden: frozenset[str]) -> tuple[str, set[str]]:
    from zymase.llvm.modules import Workspace
    from zymase.llvm.toolchain import OptimizedIR

    with Workspace() as space:
        linkage = space.Linkage
        ours = space.parse(_KEPT_LINE.sub("", optimized))
        our_defs = {f.name: f for f in ours.functions if not f.is_declaration}
        defined = set(our_defs) | hidden
        roots = choose_roots(source, clang_text, changed, defined) & defined
        if not hidden <= roots:
            # (the post-AD pipeline removed a changed local function a hidden root uses)
            return optimized, roots
        if not roots:
            return optimized, set()
        theirs = space.parse(clang_text)
        theirs.triple, theirs.data_layout = ours.triple, ours.data_layout
        restore = {}
        for value in [*theirs.functions, *theirs.global_variables]:
            if value.is_declaration or value.name in roots:
                continue
            if value.name in changed and value.name in our_defs:  # joined to zymase's definition
                ours_fn = our_defs[value.name]
                restore[value.name] = ours_fn.linkage
                ours_fn.linkage = linkage.external
                value.linkage = linkage.available_externally
            elif value.linkage not in (linkage.internal, linkage.private):
                # zymase's definition stays (a local one is linked only if a root uses it)
                value.linkage = linkage.available_externally
        for name in roots - hidden:
            our_defs[name].linkage = linkage.available_externally  # replaced by clang's
        before_link = {v.name for v in [*ours.functions, *ours.global_variables]}
        their_locals = {v.name for v in [*theirs.functions, *theirs.global_variables]
                        if v.linkage in (linkage.internal, linkage.private)}
        space.link(ours, theirs)
        for name, kind in restore.items():
            our_defs[name].linkage = kind
        # zymase's local code that only its replaced definitions used
        space.drop_dead(ours)
        _restore_local_names(ours, before_link, their_locals)
        # (code generation takes the module rather than parsing the text again: the same
        # object file, checked on the bench workloads and tests/python/test_clang_primal.py)
        text = space.print(ours)
        return OptimizedIR(text, space.detach(ours)), roots


def _restore_local_names(module, before_link: set[str], their_locals: set[str]) -> None:
    """The linker renamed clang's local symbols that met zymase's of the same name
    (``run_primal`` -> ``run_primal.25``); where zymase's died with the definitions
    replaced, clang's get their names back (profilers and debuggers show them)."""
    values = {v.name: v for v in [*module.functions, *module.global_variables]}
    for name, value in list(values.items()):
        base, dot, number = name.rpartition(".")
        if dot and number.isdigit() and base in their_locals and base not in values and name not in before_link:
            value.name = base
            values[base] = value


class ClangPipeline:
    """clang's own O-level pipeline on clang's IR, run in a child process while zymase
    differentiates (:meth:`result` waits for it)."""

    def __init__(self, clang_ir: str, clang_flags: list[str], level: int):
        from zymase.llvm.toolchain import find_clang

        self._dir = tempfile.TemporaryDirectory(prefix="zymase-clang-")
        source, self._out = Path(self._dir.name) / "in.ll", Path(self._dir.name) / "out.ll"
        source.write_text(clang_ir)
        argv = [*find_clang().argv, f"-O{level}", *pipeline_flags(clang_flags), "-Wno-unused-command-line-argument",
                "-S", "-emit-llvm", "-o", str(self._out), "-x", "ir", str(source)]
        try:
            # (its warnings repeat what the first clang run said about the same IR)
            self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)
        except OSError:
            self._proc = None

    def result(self) -> str | None:
        """clang's optimized module (features LLVM does not know dropped), or None if clang
        failed: then zymase's own code stays (slower, never wrong)."""
        from zymase.llvm.toolchain import drop_unknown_target_features

        if self._proc is None:
            return None
        self._proc.communicate()
        if self._proc.returncode != 0 or not self._out.is_file():
            return None
        return drop_unknown_target_features(self._out.read_text())

    def cancel(self) -> None:
        """Stop clang if it still runs (the build failed or did not need it) and remove
        its files."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.communicate()
        self._dir.cleanup()


#: ``-f`` flags that would make clang's pipeline other than the O-level one zymase's code gets
#: (instrumentation, LTO's pre-link pipeline) or make it emit no module
_NOT_PIPELINE = ("-fsanitize", "-fprofile", "-fcoverage", "-flto", "-fthinlto", "-fxray", "-fcs-profile",
                 "-fpseudo-probe", "-fembed-bitcode", "-fsyntax-only", "-fmodules")


def pipeline_flags(clang_flags: list[str]) -> list[str]:
    """The user's flags that steer clang's pipeline on IR: ``-f...`` (vectorizers, unrolling,
    builtins; not those of :data:`_NOT_PIPELINE`), ``-m...``, ``-mllvm <option>``,
    ``--target``/``-target``. Language and preprocessor flags (``-x c++``, ``-std=``, ``-I``,
    ``-D``) do not apply to IR, and ``-W`` flags on the IR clang itself wrote only make noise."""
    out: list[str] = []
    it = iter(clang_flags)
    for flag in it:
        if flag in ("-mllvm", "-target"):
            out += [flag, next(it, "")]
        elif flag.startswith(("-f", "-m", "--target=")) and not flag.startswith(_NOT_PIPELINE):
            out.append(flag)
    return out
