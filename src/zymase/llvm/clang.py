"""clang, which turns C and C++ into LLVM IR for zymase: finding a usable one (14..22:
``$ZYMASE_CLANG``, PATH, the ``ziglang`` package), running its front end on a source
(:func:`c_to_llvm_ir`: no LLVM pass, so that zymase's own pipelines run them; Enzyme's
source attributes spelled through zymase's header; clang's errors as zymase's), and
compiling zymase's C runtimes (:func:`runtime_ir`). LLVM's pipelines, objects and linking
are :mod:`zymase.llvm.toolchain`'s, which re-exports the names here that its callers use.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from zymase.errors import CompilerDiagnostics, ZymaseError

#: clang versions whose LLVM IR llvmlite 0.50 (LLVM 22) can read.
MIN_CLANG = 14
MAX_CLANG = 22

_INSTALL_HINT = "apt-get install -y clang-19, or pip install ziglang"

#: headers shipped with zymase (``<enzyme/enzyme>`` ...), searched after the user's ``-I``
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"
#: included when the source uses Enzyme's attributes: spells them as annotate(...)
ENZYME_ATTRIBUTES_HEADER = INCLUDE_DIR / "zymase" / "enzyme_attributes.h"


# --------------------------------------------------------------------------------------
# Finding clang
# --------------------------------------------------------------------------------------


@dataclass
class Clang:
    """A usable C compiler: ``argv`` is the command prefix (flags are appended)."""

    argv: list[str]
    version: int

    @property
    def is_zig(self) -> bool:
        return "ziglang" in self.argv


_VERSION_RE = re.compile(r"clang version (\d+)\.")


#: where Debian's and Ubuntu's packages (and apt.llvm.org's) install clang N: the major
#: version is in the path (``/usr/bin/clang-19`` -> ``/usr/lib/llvm-19/bin/clang``)
_VERSIONED_PATH_RE = re.compile(r"/lib/llvm-(\d+)/bin/clang(?:-\d+)?$")


def _clang_version(argv: list[str]) -> int | None:
    """The major version of the clang ``argv`` runs, or None if it is no clang: read from
    the path of a packaged clang (:data:`_VERSIONED_PATH_RE`), else printed by ``argv
    --version`` (starting clang costs 10-20 ms of CPU, in every build)."""
    if len(argv) == 1:
        real = os.path.realpath(argv[0])
        m = _VERSIONED_PATH_RE.search(real)
        if m and os.access(real, os.X_OK):
            return int(m.group(1))
    try:
        proc = subprocess.run(
            [*argv, "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    match = _VERSION_RE.search(proc.stdout)
    return int(match.group(1)) if match else None


def _ziglang_available() -> bool:
    """Whether the ``ziglang`` pip package (which bundles clang) is importable."""
    try:
        return importlib.util.find_spec("ziglang") is not None
    except (ImportError, ValueError):
        return False


def _zig_target() -> str:
    machine = platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    return f"{arch}-linux-gnu"


@functools.cache
def find_clang() -> Clang:
    """Find a clang between 14 and 22 (cached).

    Order: ``$ZYMASE_CLANG`` if set; ``clang`` on PATH; ``clang-22`` down to
    ``clang-14`` on PATH; the ``ziglang`` pip package (``python -m ziglang cc``).
    Newer clangs are refused: llvmlite's LLVM 22 may not read their IR.
    """
    override = os.environ.get("ZYMASE_CLANG")
    if override:
        path = shutil.which(override)
        version = _clang_version([path]) if path else None
        if version is None or not MIN_CLANG <= version <= MAX_CLANG:
            found = "not found" if path is None else f"version {version}"
            raise ZymaseError(
                f"ZYMASE_CLANG={override} is not a clang between {MIN_CLANG} and {MAX_CLANG} "
                f"({found})",
                hint="unset ZYMASE_CLANG or point it to clang-14 ... clang-22",
            )
        return Clang([path], version)

    names = ["clang"] + [f"clang-{v}" for v in range(MAX_CLANG, MIN_CLANG - 1, -1)]
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        version = _clang_version([path])
        if version is not None and MIN_CLANG <= version <= MAX_CLANG:
            return Clang([path], version)

    if _ziglang_available():
        argv = [sys.executable, "-m", "ziglang", "cc"]
        version = _clang_version(argv)
        if version is not None and MIN_CLANG <= version <= MAX_CLANG:
            return Clang(
                [*argv, "-target", _zig_target(), "-fno-sanitize=undefined"], version
            )

    raise ZymaseError(
        f"no clang between {MIN_CLANG} and {MAX_CLANG} found", hint=_INSTALL_HINT
    )


# --------------------------------------------------------------------------------------
# C -> LLVM IR
# --------------------------------------------------------------------------------------

# "file.c:3:5: error: ..." (also "fatal error:")
_DIAG_RE = re.compile(r"^(?P<loc>.+?:\d+:\d+): (?:fatal )?error: ")


def _first_error(stderr: str) -> str:
    """clang's first error line."""
    lines = [line.strip() for line in stderr.splitlines()]
    errors = [line for line in lines if _DIAG_RE.match(line)]
    if not errors:  # driver errors: "clang: error: no such file ..."
        errors = [line for line in lines if "error:" in line]
    if not errors:
        errors = [line for line in lines if line] or ["clang failed without a message"]
    return errors[0]


#: file names clang compiles as C++
CXX_SUFFIXES = (".cpp", ".cc", ".cxx", ".c++", ".C", ".CPP", ".cp")


def is_cxx_source(path: str | Path) -> bool:
    return str(path).endswith(CXX_SUFFIXES)


def compiles_cxx(flags: list[str]) -> bool:
    """Whether clang ``flags`` make every source C++ (``-x c++``, as ``zymase c++`` passes)."""
    return any(f == "-x" and nxt == "c++" for f, nxt in zip(flags, flags[1:])) or "-xc++" in flags


def c_to_llvm_ir(source: str | Path, flags: list[str] | None = None, opt_level: int = 2, *,
                 known_features_only: bool = True, meanwhile: Iterator[object] = iter(())) -> str:
    """LLVM IR text for the C file ``source``, ready for :func:`preopt`
    (``known_features_only=False``: clang's text as it is, which needs
    :func:`drop_unknown_target_features` before LLVM reads it; the derivative cache
    hashes that, so that a hit does not load LLVM). ``meanwhile``: other work, one step per
    item, done while clang runs (:func:`_run_clang`).

    For ``opt_level >= 1`` clang runs with ``-O<n> -Xclang -disable-llvm-passes``:
    the front end emits what the optimizer needs (TBAA, lifetime markers, no
    ``optnone``/``noinline``), but no LLVM pass runs. For 0 it runs with
    ``-O0 -Xclang -disable-O0-optnone`` so that later passes are not blocked.
    ``flags`` (``-I``, ``-D``, ``-g``, ``-std=``, ``-ffast-math``, ``-march=`` ...) are
    passed through after ours, so the user's choice wins.
    """
    from zymase.llvm.toolchain import _check_level

    _check_level(opt_level)
    source = Path(source)
    if not source.is_file():
        raise ZymaseError(
            f"no such C file: {source}", hint="check the path of the source file"
        )
    clang = find_clang()
    if opt_level == 0:
        level_flags = ["-O0", "-Xclang", "-disable-O0-optnone"]
    else:
        level_flags = [f"-O{opt_level}", "-Xclang", "-disable-llvm-passes"]
    # zig's clang emits debug info unless told otherwise; plain clang does not.
    wants_debug = any(f.startswith("-g") for f in (flags or []))
    extra = ["-g0"] if clang.is_zig and not wants_debug else []
    with tempfile.TemporaryDirectory(prefix="zymase-") as tmp:
        out = Path(tmp) / (source.stem + ".ll")
        argv = [
            *clang.argv,
            *level_flags,
            *extra,
            *(flags or []),
            "-isystem",
            str(INCLUDE_DIR),
            "-S",
            "-emit-llvm",
            "-o",
            str(out),
            str(source),
        ]
        try:
            proc = _run_clang(argv, out, meanwhile)
            needs_header = _uses_enzyme_attributes(proc.stderr)
        except CompilerDiagnostics as err:  # -Werror makes the ignored attribute an error
            if not _uses_enzyme_attributes(err.diagnostics):
                _refuse_enzyme_attributes(err.diagnostics)
                raise
            needs_header = True
        if needs_header:
            # Enzyme's attributes, which clang dropped: once more with the header that
            # spells them as annotate(...) (not always included: its macros would take
            # the names from ordinary identifiers)
            try:
                proc = _run_clang([*argv[:-1], "-include", str(ENZYME_ATTRIBUTES_HEADER), argv[-1]], out, meanwhile)
            except CompilerDiagnostics as err:
                raise _attribute_macro_clash(err) from None
        _refuse_enzyme_attributes(proc.stderr)
        _forward_warnings(proc.stderr, clang)
        text = out.read_text()
        if not known_features_only:
            return text
        from zymase.llvm.toolchain import drop_unknown_target_features

        return drop_unknown_target_features(text)


def _with_local_includes(source: Path, seen: set | None = None) -> str:
    """The text of ``source`` and of the files it includes with ``#include "..."`` from
    its own directory, recursively (what the disk cache key must cover)."""
    seen = set() if seen is None else seen
    if source in seen or not source.is_file():
        return ""
    seen.add(source)
    text = source.read_text()
    parts = [text]
    for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        parts.append(_with_local_includes(source.parent / name, seen))
    return "\n".join(parts)


@functools.lru_cache(maxsize=4)
def runtime_ir(source: str) -> str:
    """LLVM IR text of one of zymase's C runtime files, compiled at -O2: once per process,
    and kept in the disk cache under the hash of the file and the clang command (a
    compilation costs about a second)."""
    clang = find_clang()
    extra = ["-g0"] if clang.is_zig else []
    flags = ["-O2", "-fno-math-errno", *extra]
    text = _with_local_includes(Path(source))
    from zymase import cache

    key = cache.make_key("C runtime", text, repr((clang.argv, clang.version, flags)))
    stored = cache.load(key, "runtime.ll")
    if stored is not None:
        return stored.decode()
    with tempfile.TemporaryDirectory(prefix="zymase-") as tmp:
        out = Path(tmp) / "runtime.ll"
        _run_clang([*clang.argv, *flags, "-S", "-emit-llvm", "-o", str(out), source], out)
        from zymase.llvm.toolchain import drop_unknown_target_features

        ir = drop_unknown_target_features(out.read_text())
    cache.store(key, "runtime.ll", ir.encode())
    return ir


def _run_clang(argv: list[str], out: Path, meanwhile: Iterator[object] = iter(())) -> subprocess.CompletedProcess:
    """Run clang writing ``out``; its errors as ours. While it runs, this process takes
    steps of ``meanwhile`` (each ``next`` one step) until clang ends or the steps do: the
    front end leaves it idle for 0.05-0.3 s, time a build can use (``frontends/c``: the
    engine's imports). Clang's output streams go to files, not pipes, so that clang never
    waits for this process to read them."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        try:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr)
        except OSError as exc:
            raise ZymaseError(
                f"could not run clang: {exc}", hint=_INSTALL_HINT
            ) from None
        try:
            for _ in meanwhile:
                if proc.poll() is not None:
                    break
        finally:
            returncode = proc.wait()
        stdout.seek(0)
        stderr.seek(0)
        proc = subprocess.CompletedProcess(argv, returncode, stdout.read().decode(errors="replace"),
                                           stderr.read().decode(errors="replace"))
    if proc.returncode != 0 or not out.is_file():
        first = _first_error(proc.stderr)
        if _DIAG_RE.match(first):  # errors in the source: clang's own report
            raise CompilerDiagnostics(proc.stderr, first_error=first)
        # the driver's ("clang: error: unknown argument ..."): one line of ours
        raise ZymaseError(first.removeprefix("clang: error: "), hint="check the clang flags")
    return proc


def _uses_enzyme_attributes(stderr: str) -> bool:
    """Whether clang ignored one of the Enzyme attributes zymase implements."""
    if "enzyme_" not in stderr:  # the usual case, without importing the engine's IR (xDSL)
        return False
    from zymase.llvm.pre_ad_marks import SOURCE_ATTRIBUTES

    return any(m["name"] in SOURCE_ATTRIBUTES for m in _ENZYME_ATTR_RE.finditer(stderr))


# "f.c:1:16: warning: unknown attribute 'enzyme_inactive' ignored [-Wunknown-attributes]"
_ENZYME_ATTR_RE = re.compile(r"^(?P<loc>.+?:\d+:\d+): (?:warning|error): unknown attribute '(?P<name>enzyme_\w+)' ignored",
                             re.M)


# the macro of include/zymase/enzyme_attributes.h a diagnostic comes from
_ATTR_MACRO_RE = re.compile(r"note: expanded from macro '(?P<name>enzyme_\w+)'")
# "f.c:3:3: warning: unknown attribute 'inactive' ignored", its source line, its caret
_ANY_ATTR_RE = re.compile(r"^(?P<loc>.+?:\d+:\d+): warning: unknown attribute '(?P<name>[\w:]+)' ignored.*\n"
                          r"(?P<source>.*\|.*)\n(?P<caret>.*\|\s*)\^", re.M)


def _refuse_enzyme_attributes(stderr: str) -> None:
    """Enzyme's source attributes (``__attribute__((enzyme_inactive))`` ...) exist only
    with Enzyme's clang plugin; clang ignores them with a warning, and the function
    would be differentiated as if they were not there. The ones zymase implements
    arrive here only in spellings its header does not cover (``[[enzyme_inactive]]``,
    ``[[enzyme::inactive]]``)."""
    match = _ENZYME_ATTR_RE.search(stderr)
    if match:
        raise ZymaseError(
            f"attribute '{match['name']}' is not implemented by zymase",
            construct=f"__attribute__(({match['name']}))",
            location=match["loc"],
            hint="remove the attribute (zymase would ignore it and differentiate the function's body)",
        )
    for match in _ANY_ATTR_RE.finditer(stderr):
        written = match["source"][len(match["caret"]):]
        macro = _ATTR_MACRO_RE.search(stderr, match.end())
        if match["name"] == "annotate" and macro is not None:
            written = macro["name"]  # [[enzyme_inactive]], spelled [[annotate(...)]] by the header
        elif not written.startswith("enzyme::"):
            continue
        name = re.match(r"[\w:]+", written)[0]
        raise ZymaseError(
            f"attribute '[[{name}]]' is not implemented by zymase",
            construct=f"[[{name}]]",
            location=match["loc"],
            hint="zymase reads Enzyme's attributes in the GNU spelling, __attribute__((enzyme_inactive)), "
            "__attribute__((enzyme_inactive_noblock)) and __attribute__((enzyme_function_like(\"log\"))); "
            "it would otherwise ignore this one",
        )


def _attribute_macro_clash(err: CompilerDiagnostics) -> ZymaseError:
    """A source that uses Enzyme's attributes and also names something like one of
    them: the header's macro of that name breaks the declaration."""
    macro = _ATTR_MACRO_RE.search(err.diagnostics)
    if macro is None:
        return err
    name = macro["name"]
    return ZymaseError(
        f"'{name}' is used as a name in a file that also uses __attribute__(({name})): zymase spells "
        f"the attribute with a macro '{name}', which takes the name",
        construct=name,
        location=err.message.split(": error:")[0] if ": error:" in err.message else None,
        hint=f"rename the variable or function called '{name}'",
    )


def _forward_warnings(stderr: str, clang: Clang) -> None:
    """Show clang's warnings like a compiler driver does (zig's own noise left out)."""
    lines = stderr.splitlines()
    if clang.is_zig:
        lines = [line for line in lines if "argument unused during compilation: '-c'" not in line]
    if any(line.strip() for line in lines):
        print("\n".join(lines), file=sys.stderr)
