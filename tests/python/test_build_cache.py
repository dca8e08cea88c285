"""The derivative cache of ``zymase cc`` (zymase/cache.py; issue 29 item 3): an
unchanged rebuild differentiates nothing, and every change that can change the
derivative (the function, the activities, the options, the engine) misses; a corrupt
entry is never used. Hits and misses are read from ``--time``'s report ("derivative
cache: hit" and the phases that ran), not from timings.

Each test has a cache directory of its own (ZYMASE_CACHE_DIR); the suite as a whole runs
with an empty temporary one (tests/conftest.py)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from forking_cli import run_cli

# f(a, x) = 4 * SCALE * a * x^3 at a = 2, x = 3: d/dx = 12 * SCALE * a * x^2, d/da = 4 * SCALE * x^3
PROGRAM = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const;
static double f(double a, double x) {
    double s = 0.0;
    for (int i = 0; i < 4; i++) s += SCALE * a * x * x * x;
    return s;
}
int main(void) {
    printf("%.17g\n", __enzyme_autodiff((void *)f, ACTIVITY));
    return 0;
}
"""
WRT_X = "enzyme_const, 2.0, 3.0"
WRT_A = "2.0, enzyme_const, 3.0"
ENGINE_PHASES = {"preopt", "import", "AD", "export", "optimize", "codegen"}


def _write(tmp_path: Path, scale: str = "1.5", activity: str = WRT_X) -> None:
    (tmp_path / "grad.c").write_text(PROGRAM.replace("SCALE", scale).replace("ACTIVITY", activity))


def _build(tmp_path: Path, *flags: str) -> tuple[str, set[str], float]:
    """``zymase cc --time`` of grad.c in tmp_path with the cache in tmp_path/cache; returns
    what the cache did, the phases that ran, and the derivative the program prints."""
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(tmp_path / "cache"))
    proc = run_cli(["cc", "-O2", *flags, "--time", "grad.c", "-o", "grad"], cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    phases = set(re.findall(r"^  (\w+) +[\d.]+ ms +[\d.]+ ms CPU$", proc.stderr, re.M))
    cache = re.search(r"derivative cache: (\w+)", proc.stderr)[1]
    run = subprocess.run([str(tmp_path / "grad")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return cache, phases, float(run.stdout)


def test_unchanged_rebuild_hits_and_differentiates_nothing(tmp_path):
    _write(tmp_path)
    cache, phases, value = _build(tmp_path)
    assert cache == "miss" and "AD" in phases and value == 12 * 1.5 * 2 * 9
    cache, phases, value = _build(tmp_path)
    assert cache == "hit" and not phases & ENGINE_PHASES, phases
    assert value == 12 * 1.5 * 2 * 9
    # --no-cache neither reads the entry nor writes one
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    cache, phases, value = _build(tmp_path, "--no-cache")
    assert cache == "off" and "AD" in phases and value == 12 * 1.5 * 2 * 9
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == entries


def test_changed_function_misses(tmp_path):
    _write(tmp_path, scale="1.5")
    assert _build(tmp_path)[::2] == ("miss", 12 * 1.5 * 2 * 9)
    _write(tmp_path, scale="2.5")
    assert _build(tmp_path)[::2] == ("miss", 12 * 2.5 * 2 * 9)
    _write(tmp_path, scale="1.5")
    assert _build(tmp_path)[::2] == ("hit", 12 * 1.5 * 2 * 9)


def test_changed_activities_miss(tmp_path):
    _write(tmp_path, activity=WRT_X)
    assert _build(tmp_path)[::2] == ("miss", 12 * 1.5 * 2 * 9)
    _write(tmp_path, activity=WRT_A)
    assert _build(tmp_path)[::2] == ("miss", 4 * 1.5 * 27)


def test_changed_options_miss(tmp_path):
    """-O3 and --no-preopt (clang's IR may be the same as at -O2) and --no-strong-zero
    (the IR is the same; the derivative semantics differ) each miss."""
    _write(tmp_path)
    assert _build(tmp_path)[::2] == ("miss", 12 * 1.5 * 2 * 9)
    for flags in (["-O3"], ["--no-preopt"], ["--no-strong-zero"]):
        cache, phases, value = _build(tmp_path, *flags)
        assert (cache, value) == ("miss", 12 * 1.5 * 2 * 9), flags
        assert "AD" in phases
    assert _build(tmp_path)[0] == "hit"


def test_changed_zymase_version_or_sources_miss(tmp_path, monkeypatch):
    """Built in this process, with zymase's version, then the hash of its sources, changed."""
    import zymase
    from zymase import cache as derivative_cache
    from zymase.frontends.c import Timings, build

    _write(tmp_path)
    monkeypatch.setenv("ZYMASE_CACHE_DIR", str(tmp_path / "cache"))

    def cache_use() -> str:
        t = Timings()
        build([str(tmp_path / "grad.c")], str(tmp_path / "grad"), [], [], 2, t)
        out = subprocess.run([str(tmp_path / "grad")], capture_output=True, text=True, timeout=60).stdout
        assert float(out) == 12 * 1.5 * 2 * 9
        return t.cache[0]

    assert cache_use() == "miss"
    assert cache_use() == "hit"
    monkeypatch.setattr(zymase, "__version__", zymase.__version__ + ".post1")
    assert cache_use() == "miss"
    monkeypatch.setattr(derivative_cache, "_engine_hash", "0" * 64)
    assert cache_use() == "miss"


def _entries(cache_dir: Path) -> dict[str, Path]:
    """The entries by kind ("ll", "o", "ad.ll")."""
    return {p.name.split(".", 1)[1]: p for p in cache_dir.iterdir()}


def test_corrupt_entry_is_ignored_and_rebuilt(tmp_path):
    """An entry whose payload is not the one its header vouches for (here the valid IR and
    object of another build, which would give another derivative) is not used."""
    cache_dir = tmp_path / "cache"
    _write(tmp_path, activity=WRT_X)
    assert _build(tmp_path)[::2] == ("miss", 12 * 1.5 * 2 * 9)
    mine = _entries(cache_dir)
    _write(tmp_path, activity=WRT_A)
    assert _build(tmp_path)[::2] == ("miss", 4 * 1.5 * 27)
    other = _entries_except(cache_dir, mine)
    assert sorted(mine) == sorted(other) == ["ad.ll", "ll", "o", "seen"]
    for kind, path in mine.items():
        header = path.read_bytes().partition(b"\n")[0]
        path.write_bytes(header + b"\n" + other[kind].read_bytes().partition(b"\n")[2])
    _write(tmp_path, activity=WRT_X)
    cache, phases, value = _build(tmp_path)
    assert (cache, value) == ("miss", 12 * 1.5 * 2 * 9) and "AD" in phases
    # rewritten whole: the next build uses it; a truncated entry is not used either
    assert _build(tmp_path)[::2] == ("hit", 12 * 1.5 * 2 * 9)
    for path in mine.values():
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    cache, phases, value = _build(tmp_path)
    assert (cache, value) == ("miss", 12 * 1.5 * 2 * 9) and "AD" in phases


def _entries_except(cache_dir: Path, known: dict[str, Path]) -> dict[str, Path]:
    return {p.name.split(".", 1)[1]: p for p in cache_dir.iterdir() if p not in known.values()}


# grad_f (noinline) holds the marker call: main is outside the differentiated part
SPLIT_PROGRAM = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
static double f(double x) { return x * x * x; }
__attribute__((noinline)) double grad_f(double x) { return __enzyme_autodiff((void *)f, x); }
int main(void) {
    printf("%.17g\n", grad_f(AT));
    return 0;
}
"""


def test_change_outside_the_differentiated_part_reuses_its_derivative(tmp_path):
    """main changes (the build misses), the differentiated part does not: its derivative IR
    comes from the cache and nothing is differentiated; a change inside the part is."""
    (tmp_path / "grad.c").write_text(SPLIT_PROGRAM.replace("AT", "2.0"))
    cache, phases, value = _build(tmp_path)
    assert (cache, value) == ("miss", 12.0) and "AD" in phases
    (tmp_path / "grad.c").write_text(SPLIT_PROGRAM.replace("AT", "3.0"))
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(tmp_path / "cache"))
    proc = run_cli(["cc", "-O2", "--time", "grad.c", "-o", "grad"], cwd=tmp_path, env=env, timeout=300)
    assert "derivative cache: miss, part hit" in proc.stderr, proc.stderr
    assert not {"import", "AD", "export"} & set(re.findall(r"^  (\w+) +[\d.]+ ms +[\d.]+ ms CPU$", proc.stderr, re.M))
    run = subprocess.run([str(tmp_path / "grad")], capture_output=True, text=True, timeout=60)
    assert float(run.stdout) == 27.0
    (tmp_path / "grad.c").write_text(SPLIT_PROGRAM.replace("AT", "3.0").replace("x * x * x", "x * x"))
    cache, phases, value = _build(tmp_path)
    assert (cache, value) == ("miss", 6.0) and "AD" in phases


def test_concurrent_builds_leave_whole_entries(tmp_path, monkeypatch):
    """Two builds of one file at once, sharing the cache: each writes its entries to a
    temporary file and renames it, so what is left passes its checksum and is used."""
    import threading

    from zymase import cache as derivative_cache

    _write(tmp_path)
    results: list[tuple] = []

    def build(k: int) -> None:
        env = dict(os.environ, ZYMASE_CACHE_DIR=str(tmp_path / "cache"))
        results.append(run_cli(["cc", "-O2", "grad.c", "-o", f"grad{k}"], cwd=tmp_path, env=env, timeout=300))

    threads = [threading.Thread(target=build, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert sorted(name.split(".", 1)[1] for name in entries) == ["ad.ll", "ll", "o", "seen"], entries  # no temporary files
    monkeypatch.setenv("ZYMASE_CACHE_DIR", str(tmp_path / "cache"))
    for name in entries:
        assert derivative_cache.load(*name.split(".", 1)) is not None, name
    assert _build(tmp_path)[::2] == ("hit", 12 * 1.5 * 2 * 9)


def test_cache_command_lists_and_clears_only_entries(tmp_path):
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    (cache_dir / ("a" * 40 + ".ll")).write_text("x")
    (cache_dir / ("b" * 40 + ".numba.ll")).write_text("y")
    (cache_dir / "notes.txt").write_text("the user's own file")
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(cache_dir))
    shown = run_cli(["cache"], env=env)
    assert shown.returncode == 0 and f"{cache_dir}: 2 entries" in shown.stdout, shown.stdout
    cleared = run_cli(["cache", "clear"], env=env)
    assert cleared.returncode == 0 and "removed 2 cache entries" in cleared.stdout
    assert [p.name for p in cache_dir.iterdir()] == ["notes.txt"]
    wrong = run_cli(["cache", "purge"], env=env)
    assert wrong.returncode == 1 and wrong.stderr.startswith("zymase: error: unknown cache command 'purge'")


def test_suite_uses_an_empty_cache_of_its_own():
    """tests/conftest.py points ZYMASE_CACHE_DIR at a fresh temporary directory, so that no
    entry made outside this run answers a test's build."""
    import tempfile

    from zymase import cache as derivative_cache

    directory = derivative_cache.cache_dir()
    assert directory.name.startswith("zymase-test-cache-")
    assert directory.parent == Path(tempfile.gettempdir())


def _parse_runtimes(monkeypatch):
    """The runtimes zymase ships are built from their descriptions (zymase.runtime_ops),
    not parsed: the parse and its cache, which serve a runtime without one (edited
    without regenerating them, or another xDSL), are tested by turning that off."""
    import zymase.runtime_ops

    monkeypatch.setattr(zymase.runtime_ops, "built_module", lambda text: None)


def test_runtime_parse_key_covers_the_ir_layer_not_the_whole_engine(tmp_path, monkeypatch):
    """The key of a shipped runtime's parse (cache.parsed_mlir) hashes zymase's IR layer,
    what the parse depends on besides the text, xDSL and Python; hashing the whole engine
    (1.4 MB) was about 10 ms of every process's first taping derivative (issue 29,
    first-call time). An edit of the IR layer still misses."""
    from zymase import cache as derivative_cache
    from zymase.ir import print_mlir
    from zymase.transforms import lower_tape

    monkeypatch.setenv("ZYMASE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(derivative_cache, "_PARSED", {})
    _parse_runtimes(monkeypatch)

    def whole_engine():
        raise AssertionError("the runtime's parse hashed the whole engine")

    monkeypatch.setattr(derivative_cache, "engine_fingerprint", whole_engine)
    text, name = lower_tape.cache_runtime_text(), "<zymase cache runtime>"
    first = print_mlir(derivative_cache.parsed_mlir(text, name))
    entries = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert len(entries) == 1
    # another state of the IR layer (an edited dialect): a new entry, parsed again
    root = tmp_path / "zymase"
    (root / "ir").mkdir(parents=True)
    (root / "ir" / "__init__.py").write_text("# another IR layer\n")
    monkeypatch.setattr(derivative_cache, "__file__", str(root / "cache.py"))
    monkeypatch.setattr(derivative_cache, "_ir_hash", None)
    derivative_cache._PARSED.clear()
    assert print_mlir(derivative_cache.parsed_mlir(text, name)) == first
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_engine_fingerprint_covers_the_c_runtimes(tmp_path, monkeypatch):
    """The derivative runtimes (BLAS, MPI) are linked into cached outputs: an edit of one
    must change the engine's fingerprint like an edit of a Python module (issue 27 item 3,
    found while testing the MPI runtime)."""
    from zymase import cache as derivative_cache

    root = tmp_path / "zymase"
    (root / "autodiff" / "rules").mkdir(parents=True)
    (root / "include").mkdir()
    runtime = root / "autodiff" / "rules" / "mpi_runtime.c"
    runtime.write_text("int f(void) { return 1; }\n")
    (root / "autodiff" / "rules" / "lapack_runtime.h").write_text("/* */\n")
    monkeypatch.setattr(derivative_cache, "__file__", str(root / "cache.py"))
    monkeypatch.setattr(derivative_cache, "_engine_hash", None)
    before = derivative_cache.engine_fingerprint()
    runtime.write_text("int f(void) { return 2; }\n")
    monkeypatch.setattr(derivative_cache, "_engine_hash", None)
    assert derivative_cache.engine_fingerprint() != before


def test_cache_hit_imports_neither_llvm_nor_the_engine(tmp_path):
    # issue 29 targets (a cached rebuild at most clang's time + 0.3 s): a hit runs clang,
    # hashes and copies files; LLVM's binding (about 0.1 s to load) and xDSL are not needed
    import sys

    _write(tmp_path)
    assert _build(tmp_path)[0] == "miss"
    script = ("import sys; from zymase.cli import main; "
              "rc = main(['cc', '-O2', '--time', 'grad.c', '-o', 'grad']); "
              "print(rc, sorted(m for m in ('llvmlite.binding', 'xdsl') if m in sys.modules))")
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert "derivative cache: hit" in proc.stderr, proc.stderr
    assert proc.stdout.split() == ["0", "[]"], proc.stdout


def test_tape_runtime_is_parsed_once_per_cache_directory(tmp_path, monkeypatch):
    # issue 29 item 1 (text parsed again): every build that tapes parsed the tape
    # runtime's MLIR text with xDSL's parser, 0.2-0.4 s of each workload's AD. It is
    # kept parsed in the cache directory; an entry that does not load is parsed again
    import zymase.ir
    from zymase import cache as derivative_cache
    from zymase.ir import print_mlir
    from zymase.transforms import lower_tape

    monkeypatch.setenv("ZYMASE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(derivative_cache, "_PARSED", {})  # this process has parsed nothing
    _parse_runtimes(monkeypatch)
    text, name = lower_tape.cache_runtime_text(), "<zymase cache runtime>"
    parsed: list[str] = []
    parse = zymase.ir.parse_mlir
    monkeypatch.setattr(zymase.ir, "parse_mlir", lambda t, n: parsed.append(n) or parse(t, n))
    first = derivative_cache.parsed_mlir(text, name)
    derivative_cache._PARSED.clear()  # as in the next process
    second = derivative_cache.parsed_mlir(text, name)
    assert parsed == [name] and print_mlir(second) == print_mlir(first)
    assert second is not first and next(iter(second.walk())) is not next(iter(first.walk()))
    for entry in tmp_path.iterdir():  # an entry of another xDSL: whole, but not a module
        key, kind = entry.name.split(".", 1)
        derivative_cache.store(key, kind, b"not a parsed module")
    derivative_cache._PARSED.clear()
    assert print_mlir(derivative_cache.parsed_mlir(text, name)) == print_mlir(first)
    assert parsed == [name, name]
