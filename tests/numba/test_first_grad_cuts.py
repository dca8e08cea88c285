"""Work the first ``zymase.grad`` call no longer does (issue 29, the first call at most 2x
Numba's compile of the primal; bench/numba_first_call.py measures the time, session 39):
the cyclic collector's passes during the engine's import, the second-order API imported
for a plain njit function, numba-mpi's support without numba-mpi, and multiline regular
expressions tried at every character of the kernel's module. Counts, not seconds."""

import re
import subprocess
import sys

import numpy as np
from numba import njit

import zymase
from zymase.frontends import numba as zn
from zymase.llvm import jit as jit_module


def _fresh_process(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.strip()


def test_the_engines_import_runs_inside_the_collectors_window():
    # zymase/__init__ imported zymase.ir.xdsl_import (which imports zymase.ir: xDSL's
    # dialects, most of the engine's import) before it opened collect_rarely's window, so
    # the cyclic collector ran about 40 times during it at Python's threshold of 700
    code = """
import gc
import numba
import zymase
passes = []
gc.callbacks.append(lambda phase, info: phase == "start" and passes.append(info["generation"]))
zymase.grad
print(len(passes))
"""
    # (one pass is left when the window closes, over what the import left young)
    assert int(_fresh_process(code)) <= 2


def test_a_first_grad_of_an_njit_function_imports_no_second_order_api_nor_mpi_support():
    # grad and value_and_grad asked api_second_order whether f is a transform, which
    # imported it, api_outputs and api_in_njit (135 KB of bytecode); the Numba front end
    # imported its numba-mpi support in every build (numba_mpi.in_use is whether the
    # numba_mpi package is loaded)
    code = """
import sys
import numba, numpy as np
import zymase

@numba.njit
def f(x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    return s

assert zymase.grad(f, cache=False)(np.ones(3)).tolist() == [2.0, 2.0, 2.0]
assert zymase.value_and_grad(f, cache=False)(np.ones(2))[0] == 2.0
print(sorted(m for m in ("zymase.api_second_order", "zymase.api_outputs", "zymase.api_in_njit",
                         "zymase.frontends.numba_mpi") if m in sys.modules))
"""
    assert _fresh_process(code) == "[]"


class _CountingRe:
    """The ``re`` module as a module sees it, counting searches for thread-local globals
    (MCJIT cannot allocate thread-local storage: both the front end and the JIT look)."""

    def __init__(self):
        self.thread_local_searches = 0

    def __getattr__(self, name):
        return getattr(re, name)

    def search(self, pattern, string, flags=0):
        if "thread_local" in str(pattern):
            self.thread_local_searches += 1
        return re.search(pattern, string, flags)


@njit
def _decay(x, rate):
    s = 0.0
    for i in range(x.shape[0]):
        s += np.exp(-rate * x[i]) * x[i]
    return s


def test_a_module_without_thread_local_storage_is_not_searched_for_it(monkeypatch):
    # the multiline regex (^@... thread_local) was tried at every character of the kernel's
    # module and of its entry point's: about 8M instructions each of kpp's first grad; a
    # module whose text never says thread_local cannot have such a global
    front_end, jit = _CountingRe(), _CountingRe()
    monkeypatch.setattr(zn, "re", front_end)
    monkeypatch.setattr(jit_module, "re", jit)
    x = np.linspace(0.0, 1.0, 6)
    g = zymase.grad(_decay, (0, 1), cache=False)(x, 0.5)
    np.testing.assert_allclose(g[0], np.exp(-0.5 * x) * (1.0 - 0.5 * x), rtol=1e-13)
    np.testing.assert_allclose(g[1], np.sum(-x * x * np.exp(-0.5 * x)), rtol=1e-13)
    assert (front_end.thread_local_searches, jit.thread_local_searches) == (0, 0)


def test_the_environment_globals_are_found_on_their_lines():
    # _ENVIRONMENT_GLOBAL starts with a literal (the search skips from line to line) and is
    # matched in "\n" + the text: the first line, and only lines that define the global
    text = ("@_ZN08NumbaEnv1f = common global ptr null\n"
            "  store ptr @_ZN08NumbaEnv2g, ptr %x\n"
            "@_ZN08NumbaEnv3h = common global ptr null\n")
    assert zn._ENVIRONMENT_GLOBAL.findall("\n" + text) == ["_ZN08NumbaEnv1f", "_ZN08NumbaEnv3h"]
