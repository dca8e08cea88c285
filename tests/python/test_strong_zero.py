"""Strong zeros (issue 23 item 2): a zero adjoint or tangent times an infinite partial
contributes zero, in C, MLIR and Numba; ``--no-strong-zero`` / ``strong_zero=False``
gives IEEE propagation back; guards appear only where a partial may be non-finite.

The C program tests/c/memory/strong_zero.c checks the values at every optimization
level (tests/test_c_memory_programs.py); here: that its IEEE-labelled checks do fail
without strong zeros (so it can fail), the MLIR and Numba paths, and where guards go.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import numpy as np
import pytest
from numba import njit

import zymase
import zymase.mlir
from forking_cli import run_cli


def acts(*names: str) -> str:
    return "[" + ", ".join(f"#enzyme<activity enzyme_{n}>" for n in names) + "]"

PROGRAM = Path(__file__).resolve().parents[1] / "c" / "memory" / "strong_zero.c"


def _build_and_run(zymase_cli, tmp_path, *flags) -> list[str]:
    exe = tmp_path / "strong_zero"
    build = run_cli(["cc", "-O2", *flags, str(PROGRAM), "-o", str(exe), "-lm"],
                    timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines()


def test_ieee_semantics_gives_nan_exactly_where_strong_zeros_matter(zymase_cli, tmp_path):
    """Built with IEEE semantics, some of the checks marked "(IEEE: nan)" get NaN (not
    all: code the optimizer speculated out of a branch is guarded in both modes), and
    no other check fails."""
    lines = _build_and_run(zymase_cli, tmp_path, "--no-strong-zero")
    failed = [line for line in lines if line.startswith("FAIL ")]
    assert failed, lines
    assert all("(IEEE: nan)" in line and "nan" in line.split("got")[1] for line in failed), lines


def _guards(ll: str) -> int:
    """Compares of a double with 0.0 (strong-zero guards feed a select with them)."""
    return sum(ll.count(f"fcmp {p} double") for p in ("oeq", "une", "one", "ueq"))


PRELUDE = r"""
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
void grad(double *x, double *dx, int n);
"""

GUARD_PROGRAMS = {
    # no singular op: products and sums only
    "products": "double f(const double *x, int n) { double s = 0.0;"
                " for (int i = 0; i < n; i++) s += x[i] * x[i] * x[0]; return s; }",
    # a logistic: the division is by 1 + exp(-z) >= 1, regular
    "logistic": "double f(const double *x, int n) { double s = 0.0;"
                " for (int i = 0; i < n; i++) s += x[i] / (1.0 + exp(-x[i])); return s; }",
    # a division by data, singular where x[i] = 0, and its quotient compared
    "clipped_inverse": "double f(const double *x, int n) { double s = 0.0;"
                       " for (int i = 0; i < n; i++) { double q = 1.0 / x[i]; s += q < 10.0 ? q : 10.0; }"
                       " return s; }",
}
GRAD = ("void grad(double *x, double *dx, int n) {"
        " __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, n); }")


@pytest.mark.parametrize("name", GUARD_PROGRAMS)
def test_guards_only_where_a_partial_may_be_infinite(zymase_cli, tmp_path, name):
    src = tmp_path / f"{name}.c"
    src.write_text(PRELUDE + GUARD_PROGRAMS[name] + "\n" + GRAD + "\n")
    guards = {}
    for variant, flags in (("strong", []), ("ieee", ["--no-strong-zero"])):
        ll = tmp_path / f"{variant}.ll"
        build = run_cli(["cc", "-O2", *flags, "-c", str(src), "-S", "-emit-llvm", "-o", str(ll)],
                        timeout=300)
        assert build.returncode == 0, build.stderr
        guards[variant] = _guards(ll.read_text())
    if name == "clipped_inverse":
        assert guards["strong"] > guards["ieee"]
    else:
        assert guards["strong"] == guards["ieee"]


# ----------------------------------------------------------------------------- MLIR

THRESHOLDED = f"""
func.func @f(%x: f64, %y: f64) -> f64 {{
  %r = math.sqrt %x : f64
  %eps = arith.constant 1.0e-6 : f64
  %big = arith.cmpf ogt, %r, %eps : f64
  %zero = arith.constant 0.0 : f64
  %t = arith.select %big, %r, %zero : f64
  %s = arith.addf %t, %y : f64
  func.return %s : f64
}}
func.func @df(%x: f64, %y: f64) -> (f64, f64) {{
  %one = arith.constant 1.0 : f64
  %r:2 = enzyme.autodiff @f(%x, %y, %one) {{activity = {acts("active", "active")},
      ret_activity = {acts("activenoneed")}}} : (f64, f64, f64) -> (f64, f64)
  func.return %r#0, %r#1 : f64, f64
}}
func.func @tf(%x: f64, %y: f64) -> f64 {{
  %one = arith.constant 1.0 : f64
  %zero = arith.constant 0.0 : f64
  %r = enzyme.fwddiff @f(%x, %zero, %y, %one) {{activity = {acts("dup", "dup")},
      ret_activity = {acts("dupnoneed")}}} : (f64, f64, f64, f64) -> f64
  func.return %r : f64
}}
"""


@pytest.mark.parametrize("structured_ad", [True, False])
def test_mlir_strong_zero(structured_ad):
    m = zymase.mlir.compile(THRESHOLDED, structured_ad=structured_ad)
    assert m.df(0.0, 2.0) == (0.0, 1.0)
    assert m.tf(0.0, 2.0) == 1.0
    dx, _ = m.df(4.0, 2.0)
    assert math.isclose(dx, 0.25)
    ieee = zymase.mlir.compile(THRESHOLDED, structured_ad=structured_ad, strong_zero=False)
    assert math.isnan(ieee.df(0.0, 2.0)[0])


# ---------------------------------------------------------------------------- Numba


@njit
def thresholded_roots(x):
    s = 0.0
    for i in range(x.shape[0]):
        d = np.sqrt(x[i])
        if d > 1e-6:
            s += d
    return s


@njit(error_model="numpy")  # 1 / 0 is inf, as in C (Python's model raises)
def pair_energy(x):
    e = 0.0
    for i in range(x.shape[0]):
        for j in range(x.shape[0]):
            r = np.sqrt((x[i] - x[j]) ** 2)
            inv6 = 1.0 / r ** 6
            if r > 0.0:
                e += inv6
    return e


def test_numba_thresholded_roots():
    x = np.array([0.0, 4.0, 9.0])
    g = zymase.grad(thresholded_roots)(x)
    np.testing.assert_allclose(g, [0.0, 0.25, 1.0 / 6.0], rtol=1e-12)
    _, t = zymase.jvp(thresholded_roots, (x,), (np.array([1.0, 1.0, 0.0]),))
    assert math.isclose(t, 0.25)
    assert math.isnan(zymase.grad(thresholded_roots, strong_zero=False)(x)[0])


def test_numba_pair_energy_zero_diagonal():
    x = np.array([0.0, 1.0, 2.5])
    g = zymase.grad(pair_energy)(x)
    want = [sum(-12.0 * np.sign(x[k] - x[j]) * abs(x[k] - x[j]) ** -7 for j in range(3) if j != k) for k in range(3)]
    np.testing.assert_allclose(g, want, rtol=1e-10)


# ------------------------------------------- loop-invariant singular partials (issue 29)
# A loop dividing by a value computed before it (a norm) guards each term d * (1/m); when
# 1/m is finite the guards cannot matter, and the loop is versioned: a copy without them
# runs then (transforms/strong_zero_versioning.py). The values are checked by
# tests/c/memory/strong_zero_invariant.c at every level; here, which loops are versioned.

NORMALIZE = r"""
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const;
__attribute__((noinline)) static double mag(const double *restrict x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return sqrt(s);
}
static void normalize(double *restrict out, const double *restrict x, int n) {
    for (int i = 0; i < n; i++) out[i] = x[i] / %s;
}
void grad(double *out, double *dout, double *x, double *dx, int n) {
    __enzyme_autodiff((void *)normalize, enzyme_dup, out, dout, enzyme_dup, x, dx, enzyme_const, n);
}
"""


def _versioned_guards(monkeypatch, tmp_path, divisor: str) -> int:
    """How many strong-zero guards the versioned loops' unguarded copies dropped, for
    ``out[i] = x[i] / <divisor>`` built as the issue's target (-O2 -fno-math-errno)."""
    from zymase.frontends.c import Timings, differentiate_llvm_ir
    from zymase.llvm import toolchain
    from zymase.transforms import strong_zero_versioning

    counts = []
    real = strong_zero_versioning.version_invariant_guards
    monkeypatch.setattr(strong_zero_versioning, "version_invariant_guards",
                        lambda module: counts.append(real(module)) or counts[-1])
    src = tmp_path / "normalize.c"
    src.write_text(NORMALIZE % divisor)
    differentiate_llvm_ir(toolchain.c_to_llvm_ir(src, ["-fno-math-errno"], 2), str(src), 2, Timings())
    return sum(counts)


def test_invariant_singular_partials_are_versioned(monkeypatch, tmp_path):
    """Both guards of the normalization's reverse loop (1/m, and -x[i]/m^2 read from x,
    which only the stores into out could make non-finite: restrict keeps them apart) go
    from the copy; a divisor that varies in the loop versions nothing."""
    assert _versioned_guards(monkeypatch, tmp_path, "mag(x, n)") == 2
    assert _versioned_guards(monkeypatch, tmp_path, "(x[i] * x[i] + 1e-300)") == 0


@njit(error_model="numpy")
def normalized(out, x):
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * x[i]
    m = np.sqrt(s)
    for i in range(x.shape[0]):
        out[i] = x[i] / m


def test_numba_invariant_singular_partial(monkeypatch):
    from zymase.transforms import strong_zero_versioning

    counts = []
    real = strong_zero_versioning.version_invariant_guards
    monkeypatch.setattr(strong_zero_versioning, "version_invariant_guards",
                        lambda module: counts.append(real(module)) or counts[-1])
    w = np.array([1.0, 0.0, 2.0, 0.0, 3.0, 0.0, 4.0])
    x = np.arange(1.0, 8.0)
    dx = np.zeros(7)
    zymase.autodiff(normalized, zymase.Duplicated(np.zeros(7), w.copy()), zymase.Duplicated(x, dx))
    m = np.linalg.norm(x)
    np.testing.assert_allclose(dx, w / m - (w @ x) * x / m**3, rtol=1e-12)
    assert sum(counts) >= 1  # the 1/m guard (Numba's arrays hide the roots -x/m^2 reads)
    # every x zero, every seed zero: 1/m is infinite, the guarded loop runs, all zeros
    dx = np.zeros(7)
    zymase.autodiff(normalized, zymase.Duplicated(np.zeros(7), np.zeros(7)), zymase.Duplicated(np.zeros(7), dx))
    assert not np.isnan(dx).any() and (dx == 0.0).all()
