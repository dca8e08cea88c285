"""Shared pytest fixtures for zymase's test suite."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent
C_PROGRAMS_DIR = TESTS_DIR / "c"

# The derivative cache of `zymase cc` and `cache=True` (zymase/cache.py) is on by default:
# every test process gets an empty one of its own, set before the test server of
# forking_cli starts (its children inherit the environment), so that no entry made
# outside this run, by another engine state or another run, can answer a test's build.
_TEST_CACHE_DIR = tempfile.mkdtemp(prefix="zymase-test-cache-")
os.environ["ZYMASE_CACHE_DIR"] = _TEST_CACHE_DIR
atexit.register(shutil.rmtree, _TEST_CACHE_DIR, ignore_errors=True)

# The OpenMP programs the tests run (tests/c/openmp at 1, 2 and 4 threads, the parallel
# fuzz sample) and Numba's prange (its "omp" threading layer) leave their threads
# spinning at every barrier and after every parallel region (LLVM's libomp for 200 ms,
# GNU's libgomp for its spin count) before they sleep. The suite runs two pytest workers
# on two cores, so four spinning threads take the CPU the threads they wait for, and the
# other worker, need: tests/c/openmp's programs used 3.6 times the CPU and 2.6 times the
# wall time of the same runs with passive waiting. Passive waiting changes when an idle
# thread sleeps, not what any thread computes; an explicit OMP_WAIT_POLICY is left as it is.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """``pytest -n 2`` without ``--dist`` sends each test file to one worker (xdist's
    ``--dist loadfile``, largest files first) instead of dealing a file's tests to both
    workers (``--dist load``), which made each worker pay a file's one-time work: its
    module-scoped fixtures (MLIR modules compiled, clang's IR of a corpus), the Numba
    compilation of its njit functions and the kernels its tests share, its JAX traces.
    An explicit ``--dist`` is left as it is."""
    if getattr(config.option, "numprocesses", None) and getattr(config.option, "dist", None) == "no":
        config.option.dist = "loadfile"


def zymase_command() -> list[str]:
    """The argv prefix that runs the ``zymase`` command line of this interpreter.

    The console script installed beside ``sys.executable`` comes first (that is the
    one ``pip install .`` made for this environment), then one on PATH, then
    ``python -m zymase.cli``.
    """
    beside = Path(sys.executable).parent / "zymase"
    if beside.is_file():
        return [str(beside)]
    on_path = shutil.which("zymase")
    if on_path:
        return [on_path]
    return [sys.executable, "-m", "zymase.cli"]


@pytest.fixture(scope="session")
def zymase_cli() -> list[str]:
    return zymase_command()


@pytest.fixture(scope="session")
def c_programs_dir() -> Path:
    return C_PROGRAMS_DIR
