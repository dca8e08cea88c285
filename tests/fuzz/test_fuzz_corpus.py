"""The fuzz regression corpus: reduced programs from past fuzz failures (tests/fuzz/corpus/).

Each file starts with the ``fuzz-failure`` header the campaign wrote (language, level,
the failure seen then) and is checked again the way the fuzzer checks it (reverse
against forward against finite differences): it must now be right or cleanly refused,
never wrong or crashed. Reduced programs that still fail are kept in
tests/fuzz/corpus_open/ (not run here) until the engine is fixed; moving a file from
there to corpus/ turns it into a regression test.
"""

from __future__ import annotations

from pathlib import Path

from .campaign import read_header
from .check_c import CKPT_FLAGS, LEVELS, Outcome, check_c_source
from .check_par import PRANGE_LEVEL, THREADS, check_omp_source

CORPUS = Path(__file__).resolve().parent / "corpus"
C_FILES = sorted(CORPUS.glob("*.c"))
NJIT_FILES = sorted(CORPUS.glob("*.py"))


def _program(path: Path) -> tuple[dict, str]:
    full = path.read_text()
    info = read_header(full)
    assert info is not None, f"{path.name}: no fuzz-failure header"
    return info, full.split("\n", 1)[1]


def test_corpus_files_have_headers():
    for path in C_FILES + NJIT_FILES + sorted((CORPUS.parent / "corpus_open").glob("*.[cp]*")):
        if path.suffix in (".c", ".py"):
            info, _ = _program(path)
            assert info["lang"] in ("c", "c-width", "c-nested", "c-ckpt", "c-mem", "njit", "njit-hessian", "jax", "c-omp",
                                    "njit-prange")
            assert info["level"] in LEVELS or info["level"] in ("njit", "njit-hessian", "jax", PRANGE_LEVEL)


def _check_jax(text: str):
    try:
        import jax  # noqa: F401
    except ImportError:  # JAX programs need the optional extra (CI installs it)
        return None
    from .check_jax import check_jax_source

    return check_jax_source(text)


def test_corpus_programs_are_right_now():
    """Every reduced past failure in corpus/ is now right or cleanly refused (one test
    over the directory, so that an empty corpus is an empty loop, not a skipped test)."""
    from .check_njit import check_njit_source

    bad = []
    for path in C_FILES + NJIT_FILES:
        info, text = _program(path)
        if info["lang"] in ("c", "c-width", "c-nested", "c-mem"):  # the driver in the file says what it checks
            o = check_c_source(text, info["level"], valgrind=bool(info.get("valgrind")))
        elif info["lang"] == "c-ckpt":  # built under the small tape limit, as the campaign did
            o = check_c_source(text, info["level"], valgrind=bool(info.get("valgrind")), extra=CKPT_FLAGS)
        elif info["lang"] == "jax":
            o = _check_jax(text)
        elif info["lang"] == "c-omp":  # parallel modes: check_par.py
            o = check_omp_source(text, info["level"])
        elif info["lang"] == "njit-prange":
            o = _prange_in_worker(path)
        elif info["lang"] == "njit-hessian":
            from .check_hessian import check_hessian_source

            o = check_hessian_source(text)
        else:
            o = check_njit_source(text)
        if o is not None and o.kind not in ("right", "refused"):
            bad.append(f"{path.name} at {info['level']}: {o.kind}: {o.detail}")
    assert not bad, "\n".join(bad)


def _prange_in_worker(path: Path) -> Outcome:
    """A prange program checked in a process whose Numba may run 4 threads."""
    import json
    import os
    import subprocess
    import sys

    root = CORPUS.parents[2]
    env = {**os.environ, "NUMBA_NUM_THREADS": str(max(THREADS)),
           "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-m", "tests.fuzz.check_par", "--file", str(path)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return Outcome("crashed", PRANGE_LEVEL, f"worker exit {run.returncode}: {run.stderr[-300:]}")
    rec = json.loads(lines[-1])
    return Outcome(rec["kind"], PRANGE_LEVEL, rec["detail"])
