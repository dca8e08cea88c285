"""The functions AD leaves unchanged come out of ``zymase cc`` as clang's own pipeline makes
them (issue 29 item 0, llvm/clang_primal.py; the timing is bench/primal_parity.py).

The example is the ODE workload's cell loop: its boundary reads ``i > 0 ? u[i-1] : u[i]``
are vectorized by clang-19's pipeline and not by llvmlite's LLVM 22, which folds them into
a load from a select of pointers (bench/results/2026-11-28-primal-parity.md). The gradient
is checked against central differences of the primal the program runs, so that clang's
primal and zymase's derivative are checked against each other; the second program checks
that a static variable both sides use is not split into two copies.
"""

from __future__ import annotations

import re
import subprocess

import pytest
from c_harness import build_and_run, emit_llvm, function_ir
from forking_cli import run_cli

from zymase.llvm.toolchain import find_clang

DIFFUSION = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_out;

/* explicit diffusion steps with zero-flux ends, read as the ODE workload reads them */
double diffuse(double D, const double *restrict u0, int n, int steps) {
    double *u = malloc(sizeof(double) * (size_t)n), *v = malloc(sizeof(double) * (size_t)n);
    memcpy(u, u0, sizeof(double) * (size_t)n);
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            double left = i > 0 ? u[i - 1] : u[i];
            double right = i < n - 1 ? u[i + 1] : u[i];
            v[i] = u[i] + D * (left - 2.0 * u[i] + right) + 0.01 * u[i] * (1.0 - u[i]);
        }
        double *t = u;
        u = v;
        v = t;
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += u[i] * u[i];
    free(u);
    free(v);
    return sum;
}

/* the same computation written again, for the primal's value */
static double reference(double D, const double *u0, int n, int steps) {
    double u[64], v[64];
    for (int i = 0; i < n; i++) u[i] = u0[i];
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < n; i++) {
            double left = u[i > 0 ? i - 1 : i], right = u[i < n - 1 ? i + 1 : i];
            v[i] = u[i] + D * (left - 2.0 * u[i] + right) + 0.01 * u[i] * (1.0 - u[i]);
        }
        for (int i = 0; i < n; i++) u[i] = v[i];
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += u[i] * u[i];
    return sum;
}

__attribute__((noinline)) static double gradient(double D, double *u0, double *du0, int n, int steps) {
    return __enzyme_autodiff((void *)diffuse, enzyme_out, D, enzyme_dup, u0, du0, enzyme_const, n,
                             enzyme_const, steps);
}

static int check(const char *what, double got, double want, double tol) {
    if (fabs(got - want) <= tol * fmax(1.0, fabs(want))) return 0;
    printf("FAIL %s: got %.17g, want %.17g\n", what, got, want);
    return 1;
}

int main(void) {
    enum { N = 37, STEPS = 20 };
    double u0[N], du0[N] = {0}, D = 0.2, h = 1e-5;
    for (int i = 0; i < N; i++) u0[i] = 0.5 + 0.4 * sin(0.7 * i);
    int failed = check("primal", diffuse(D, u0, N, STEPS), reference(D, u0, N, STEPS), 1e-13);
    double dD = gradient(D, u0, du0, N, STEPS);
    failed |= check("d/dD", dD, (diffuse(D + h, u0, N, STEPS) - diffuse(D - h, u0, N, STEPS)) / (2 * h), 1e-6);
    for (int i = 0; i < N; i += 6) {
        double keep = u0[i];
        u0[i] = keep + h;
        double up = diffuse(D, u0, N, STEPS);
        u0[i] = keep - h;
        double down = diffuse(D, u0, N, STEPS);
        u0[i] = keep;
        failed |= check("d/du0", du0[i], (up - down) / (2 * h), 1e-6);
    }
    return failed;
}
"""

#: a static variable the derivative reads and a function AD leaves unchanged writes: taking
#: ``set_scale`` from clang's module would write clang's copy, and the derivative would read
#: zymase's (llvm/clang_primal declines it)
SHARED_STATIC = r"""
#include <math.h>
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);

static double scale = 1.0;
__attribute__((noinline)) void set_scale(double s) { scale = s; }
__attribute__((noinline)) double energy(double x) { return scale * x * x * x; }
__attribute__((noinline)) static double gradient(double x) { return __enzyme_autodiff((void *)energy, x); }

static int check(const char *what, double got, double want) {
    if (fabs(got - want) <= 1e-12 * fmax(1.0, fabs(want))) return 0;
    printf("FAIL %s: got %.17g, want %.17g\n", what, got, want);
    return 1;
}

int main(void) {
    set_scale(3.0);
    int failed = check("energy", energy(2.0), 24.0);
    failed |= check("d energy/dx", gradient(2.0), 36.0);
    set_scale(0.5);
    failed |= check("d energy/dx after set_scale(0.5)", gradient(2.0), 6.0);
    return failed;
}
"""

VECTOR = re.compile(r"<\d+ x double>")
MARCH = "-march=x86-64-v3"  # AVX2: clang-19 vectorizes the boundary reads with gathers


@pytest.fixture(scope="module")
def diffusion(tmp_path_factory):
    src = tmp_path_factory.mktemp("clang_primal") / "diffusion.c"
    src.write_text(DIFFUSION)
    return src


# issue 29 item 0: the ODE-style loop is vectorized in zymase's build as in clang's
def test_boundary_read_loop_is_clangs(diffusion, tmp_path, zymase_cli):
    clang_ll = subprocess.run([*find_clang().argv, "-O2", MARCH, "-S", "-emit-llvm", "-o", "-", str(diffusion)],
                              capture_output=True, text=True, check=True).stdout
    assert VECTOR.search(function_ir(clang_ll, "diffuse")), "clang itself no longer vectorizes the example"
    ll = emit_llvm(diffusion, ["-O2", MARCH], tmp_path, zymase_cli)
    body = function_ir(ll, "diffuse")
    assert VECTOR.search(body), f"the primal's cell loop stayed scalar:\n{body}"
    # a cached rebuild writes the same module
    assert emit_llvm(diffusion, ["-O2", MARCH], tmp_path, zymase_cli) == ll
    # `--time` names the step
    again = run_cli(["cc", "-O2", "--no-cache", "--time", "-c", str(diffusion), "-o", str(tmp_path / "d.o")],
                    cwd=tmp_path)
    assert again.returncode == 0 and re.search(r"^\s+primal\s", again.stderr, re.M), again.stderr


@pytest.mark.parametrize("flags", [["-O1"], ["-O2"], ["-O3"]], ids=" ".join)
def test_clangs_primal_with_zymases_gradient(diffusion, tmp_path, zymase_cli, flags):
    build_and_run(diffusion, flags, tmp_path, zymase_cli)


def test_static_variable_both_sides_use_is_one(tmp_path, zymase_cli):
    src = tmp_path / "shared_static.c"
    src.write_text(SHARED_STATIC)
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)


# which functions are taken from clang's module (llvm/clang_primal.choose_roots), on
# hand-written modules: `source` is what both pipelines start from, `optimized` clang's
SOURCE = """@state = internal global double 0.0
@table = internal constant [2 x double] [double 1.0, double 2.0]
@sink = global ptr null

define double @primal(double %x) {
  %t = load double, ptr @table
  %y = fmul double %x, %t
  ret double %y
}

define void @bump(double %x) {
  store double %x, ptr @state
  ret void
}

define void @setup() {
  call void @bump(double 2.0)
  ret void
}

define double @objective(double %x) {
  %s = load double, ptr @state
  %y = fmul double %x, %s
  ret double %y
}

define internal double @grad(double %x) {
  %g = call double (ptr, ...) @__enzyme_autodiff(ptr @primal, double %x)
  ret double %g
}

define internal double @grad_state(double %x) {
  %g = call double (ptr, ...) @__enzyme_autodiff(ptr @objective, double %x)
  ret double %g
}

define i32 @main() {
  %p = call double @primal(double 1.0)
  %g = call double @grad(double 1.0)
  store ptr @grad, ptr @sink
  ret i32 0
}

declare double @__enzyme_autodiff(ptr, ...)
"""


def test_roots_are_the_unchanged_functions_that_share_nothing():
    from zymase.llvm.clang_primal import choose_roots

    changed = {"grad", "grad_state"}
    defined = {"primal", "bump", "setup", "objective", "grad", "grad_state", "main"}
    # clang's global optimizer found that no one compares the table's address
    optimized = SOURCE.replace("@table = internal constant", "@table = internal unnamed_addr constant")
    # `bump`, `setup` and `objective` use the static `state`, which the derivative of
    # `objective` (zymase's) reads: taken, they would use clang's copy. `primal` uses only a
    # constant whose address does not matter, and `main` a changed function by its address,
    # which the link joins to zymase's definition
    assert choose_roots(SOURCE, optimized, changed, defined) == {"primal", "main"}
    # the table's address may be compared: clang's copy and zymase's must not both exist
    assert choose_roots(SOURCE, SOURCE, changed, defined) == set()
    # clang inlined a changed function: its marker call is in clang's `main`
    inlined = optimized.replace("%g = call double @grad(double 1.0)",
                                "%g = call double (ptr, ...) @__enzyme_autodiff(ptr @primal, double 1.0)")
    assert choose_roots(SOURCE, inlined, changed, defined) == {"primal"}
    # a changed function only called directly: clang may have specialized it for its callers
    direct = SOURCE.replace("store ptr @grad, ptr @sink", "store ptr null, ptr @sink")
    assert choose_roots(direct, direct.replace("internal constant", "internal unnamed_addr constant"),
                        changed, defined) == {"primal"}


# what LLVM 22 works on (llvm/preopt_skip, clang_primal.hide_roots): the functions no
# derivative reaches skip the pre-AD pipeline, and those clang's definitions replace are
# declarations while the post-AD pipeline runs; counted on the text each pipeline gets
AROUND = r"""
#include <math.h>
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);

double energy(double x) { return sin(x) * x * x; }
__attribute__((noinline)) double gradient(double x) { return __enzyme_autodiff((void *)energy, x); }
double tabulate(int n) { double s = 0.0; for (int i = 0; i < n; i++) s += energy(0.1 * i); return s; }
static void report(const char *what, double v) { printf("%s %.17g\n", what, v); }

int main(void) {
    double x = 0.7, h = 1e-6, fd = (energy(x + h) - energy(x - h)) / (2 * h);
    report("table", tabulate(10));
    if (fabs(gradient(x) - fd) > 1e-7) { printf("FAIL gradient %.17g, want %.17g\n", gradient(x), fd); return 1; }
    return 0;
}
"""
_DEFINED = re.compile(r"^define [^@]*@([\w.$]+)\(([^\n]*)$", re.M)


def _pipeline_inputs(monkeypatch, src):
    """The text ``preopt`` and ``optimize`` get in one in-process build of ``src`` (-O2)."""
    from zymase.frontends import c
    from zymase.llvm import toolchain

    seen: dict[str, list[str]] = {"preopt": [], "optimize": []}
    for name in seen:
        real = getattr(toolchain, name)
        monkeypatch.setattr(toolchain, name, lambda text, level, real=real, name=name:
                            seen[name].append(text) or real(text, level))
    ll, _ = c.compile_c(str(src), [], 2, c.Timings(), cache=False)
    return seen, ll


def _optimized_functions(text: str) -> set[str]:
    """The functions a pipeline on ``text`` transforms: defined, not ``optnone``."""
    return {name for name, header in _DEFINED.findall(text) if "optnone" not in header}


def test_llvm22_works_only_on_what_stays_zymases(tmp_path, monkeypatch, zymase_cli):
    src = tmp_path / "around.c"
    src.write_text(AROUND)
    seen, ll = _pipeline_inputs(monkeypatch, src)
    # the pre-AD pipeline: the differentiated part only (main, tabulate, report skipped)
    assert [_optimized_functions(t) for t in seen["preopt"]] == [{"energy", "gradient"}]
    # the post-AD pipeline: gradient, the derivative, zymase's runtime; not main, energy,
    # tabulate (clang's definitions) nor report (a local only those use)
    [optimized] = seen["optimize"]
    assert not {"main", "energy", "tabulate", "report"} & _optimized_functions(optimized)
    assert "gradient" in _optimized_functions(optimized)
    # every function is defined in the result, and the program's gradient is right
    assert {"main", "energy", "tabulate"} <= {name for name, _ in _DEFINED.findall(ll)}
    # code generation takes the linked module rather than parsing its text: the same object
    from zymase.llvm import toolchain

    assert isinstance(ll, toolchain.OptimizedIR)
    toolchain.emit_object(str(ll), tmp_path / "text.o")
    toolchain.emit_object(ll, tmp_path / "module.o")
    assert (tmp_path / "module.o").read_bytes() == (tmp_path / "text.o").read_bytes()
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)


def test_failed_link_optimizes_every_function(tmp_path, monkeypatch):
    """clang's definitions cannot be linked: zymase's own, optimized, replace the hidden roots."""
    from zymase.llvm import clang_primal

    def refuse(*args):
        raise RuntimeError("link refused")

    monkeypatch.setattr(clang_primal, "_take", refuse)
    src = tmp_path / "around.c"
    src.write_text(AROUND)
    seen, ll = _pipeline_inputs(monkeypatch, src)
    assert len(seen["optimize"]) == 2 and {"main", "energy", "tabulate"} <= _optimized_functions(seen["optimize"][1])
    assert {"main", "energy", "tabulate"} <= {name for name, _ in _DEFINED.findall(ll)}


def test_size_attributes_are_not_skipped(tmp_path, zymase_cli):
    """``optnone`` beside ``minsize`` (or ``optsize``, -Os) fails the verifier: such a
    function outside the part goes through the pre-AD pipeline as before."""
    src = tmp_path / "small.c"
    src.write_text(AROUND.replace("double tabulate(int n)", "__attribute__((minsize)) double tabulate(int n)"))
    build_and_run(src, ["-O2"], tmp_path, zymase_cli)
