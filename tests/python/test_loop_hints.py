"""Loop hints (``#pragma clang loop ...``, ``!llvm.loop`` metadata) survive differentiation.

The reader keeps the hints LLVM's loop passes act on as ``zymase.loop_hints`` on the latch
branch, the AD engine keeps them on the forward sweep's copy of the loop, and the writer
attaches them again: a loop the programmer kept scalar (in ADBench's GMM, vectorizing the
triangular update makes every vector load straddle two earlier scalar stores, and the primal
ran 1.8x slower) stays scalar in the gradient too. Before, the metadata was dropped on import.
"""

from __future__ import annotations

import re

import llvmlite.binding as llvm
import pytest
from c_harness import build_and_run, emit_llvm, function_ir

from zymase.ir import ArrayAttr, StringAttr
from zymase.llvm.loop_hints import LOOP_HINTS_ATTR
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir
from forking_cli import run_cli

HINTED = """
define double @sum(ptr %p, i64 %n) {
entry:
  %v = load double, ptr %p, align 8
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %q = getelementptr double, ptr %p, i64 %i
  %x = load double, ptr %q, align 8
  %s1 = fadd double %s, %x
  %i1 = add i64 %i, 1
  %c = icmp eq i64 %i1, %n
  br i1 %c, label %done, label %loop, !llvm.loop !0
done:
  ret double %s1
}
!0 = distinct !{!0, !1, !2, !3, !4, !5}
!1 = !{!"llvm.loop.mustprogress"}
!2 = !{!"llvm.loop.vectorize.width", i32 1}
!3 = !{!"llvm.loop.vectorize.enable", i1 true}
!4 = !{!"llvm.loop.unroll.count", i32 4}
!5 = !{!"llvm.loop.vectorize.followup_all", !6}
!6 = distinct !{!6, !1}
"""


def _nodes(text: str) -> dict[str, str]:
    return dict(re.findall(r"^(!\d+) = (.*)$", text, re.M))


def _hints_of_loops(text: str, function: str) -> list[set[str]]:
    """For each ``!llvm.loop`` attachment in ``function``, the texts of its entries."""
    nodes = _nodes(text)
    body = function_ir(text, function)
    loops = []
    for ref in re.findall(r"!llvm\.loop (!\d+)", body):
        entries = re.findall(r"!\d+", nodes[ref])[1:]
        loops.append({nodes[e] for e in entries if e in nodes})
    return loops


def test_reader_keeps_the_hints_and_writer_attaches_them_again():
    module = read_llvm_ir(HINTED, "hinted.ll")
    module.verify()
    branches = [op for op in module.walk() if LOOP_HINTS_ATTR in op.attributes]
    assert [op.name for op in branches] == ["llvm.cond_br"]
    hints = [a.data for a in branches[0].attributes[LOOP_HINTS_ATTR].data]
    # the followup (a loop id for a later pass, not a hint) is not carried
    assert hints == ["llvm.loop.mustprogress", "llvm.loop.vectorize.width=1",
                     "llvm.loop.vectorize.enable=1", "llvm.loop.unroll.count=4"]

    # a load with alias scopes too: the scope domain must not collide with the loop nodes
    load = next(op for op in module.walk() if op.name == "llvm.load")
    load.attributes["zymase.alias_scope"] = ArrayAttr([StringAttr("s")])
    out = write_llvm_ir(module)
    parsed = llvm.parse_assembly(out, llvm.create_context())
    parsed.verify()
    (loop,) = _hints_of_loops(out, "sum")
    assert loop == {'!{!"llvm.loop.mustprogress"}', '!{!"llvm.loop.vectorize.width", i32 1}',
                    '!{!"llvm.loop.vectorize.enable", i1 1}', '!{!"llvm.loop.unroll.count", i32 4}'}
    nodes = _nodes(out)
    scope_list = re.search(r"!alias\.scope (!\d+)", out).group(1)
    (scope,) = re.findall(r"!\d+", nodes[scope_list])
    domain = re.findall(r"!\d+", nodes[scope])[1]
    assert nodes[domain] == f'distinct !{{{domain}, !"zymase"}}'


PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

/* ADBench's column-by-column triangular update; the programmer keeps it scalar */
__attribute__((noinline)) double tri(const double *restrict L, const double *restrict x, double *restrict out, int d) {
    for (int i = 0; i < d; i++) out[i] = x[i];
    for (int j = 0; j < d; j++) {
#pragma clang loop vectorize(disable)
        for (int i = j + 1; i < d; i++) out[i] += *L++ * x[j];
    }
    double s = 0.0;
    for (int i = 0; i < d; i++) s += sin(out[i]);
    return s;
}

__attribute__((noinline)) void grad_tri(const double *L, double *dL, const double *x, double *dx, double *out,
                                        double *dout, int d) {
    __enzyme_autodiff((void *)tri, enzyme_dup, L, dL, enzyme_dup, x, dx, enzyme_dup, out, dout, enzyme_const, d);
}

int main(void) {
    enum { D = 9, NL = D * (D - 1) / 2 };
    double L[NL], dL[NL] = {0}, x[D], dx[D] = {0}, out[D], dout[D] = {0};
    for (int i = 0; i < NL; i++) L[i] = 0.1 * (i % 7) - 0.3;
    for (int i = 0; i < D; i++) x[i] = 0.2 * i - 0.5;
    grad_tri(L, dL, x, dx, out, dout, D);
    double worst = 0.0, h = 1e-6;
    for (int i = 0; i < D + NL; i++) {
        double *v = i < D ? &x[i] : &L[i - D], g = i < D ? dx[i] : dL[i - D], keep = *v;
        *v = keep + h;
        double up = tri(L, x, out, D);
        *v = keep - h;
        double down = tri(L, x, out, D);
        *v = keep;
        double fd = (up - down) / (2 * h), err = fabs(g - fd) / fmax(1.0, fabs(fd));
        if (err > worst) worst = err;
    }
    printf("%g\n", worst);
    return worst > 1e-6;
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_a_pragma_on_a_primal_loop_reaches_the_gradient(tmp_path, zymase_cli, opt):
    src = tmp_path / "tri.c"
    src.write_text(PROGRAM)
    text = emit_llvm(src, [opt], tmp_path, zymase_cli)
    width_one = '!{!"llvm.loop.vectorize.width", i32 1}'
    assert any(width_one in loop for loop in _hints_of_loops(text, "tri"))
    assert any(width_one in loop for loop in _hints_of_loops(text, "grad_tri")), "the forward sweep lost the hint"
    build_and_run(src, [opt], tmp_path, zymase_cli)


FORCED = r"""
#include <stdio.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
enum { N = 37 };

/* hints that make LLVM's loop vectorizer act whatever the pipeline says: before AD they
   must not (the engine differentiates scalar code; vector loads were taken as constants
   and the gradient came out zero) */
__attribute__((noinline)) double weighted(const double *restrict x, const double *restrict w, int n) {
    double s = 0.0;
#pragma clang loop vectorize(enable) vectorize_width(4) interleave_count(2)
    for (int k = 0; k < n; k++)
        s += w[k] * x[k] * x[k];
    return s;
}

__attribute__((noinline)) void grad(const double *x, double *dx, const double *w, int n) {
    __enzyme_autodiff((void *)weighted, enzyme_dup, x, dx, enzyme_const, w, enzyme_const, n);
}

int main(void) {
    double x[N], w[N], dx[N] = {0}, worst = 0.0;
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * i + 1;
        w[i] = 1.0 + i;
    }
    grad(x, dx, w, N);
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(dx[i] - 2 * w[i] * x[i]));
    printf("%g\n", worst);
    return !(worst < 1e-12);
}
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_forced_vectorization_waits_until_after_differentiation(tmp_path, zymase_cli, opt):
    src = tmp_path / "forced.c"
    src.write_text(FORCED)
    text = emit_llvm(src, [opt], tmp_path, zymase_cli)
    # the hints were hidden from the pre-AD pipeline only: the primal is vectorized as asked
    # (the gradient has no primal loop left: it needs no primal value)
    assert re.search(r"<4 x double>", function_ir(text, "weighted")), function_ir(text, "weighted")
    build_and_run(src, [opt], tmp_path, zymase_cli)


VECTOR_IR = """
declare void @__enzyme_autodiff(...)
@enzyme_dup = external global i32

define double @sum2(ptr %p) {
  %v = load <2 x double>, ptr %p, align 8
  %a = extractelement <2 x double> %v, i64 0
  %b = extractelement <2 x double> %v, i64 1
  %r = call <2 x double> @llvm.sin.v2f64(<2 x double> %v)
  %c = extractelement <2 x double> %r, i64 0
  %s = fadd double %c, %b
  ret double %s
}

define void @grad(ptr %p, ptr %dp) {
  call void (...) @__enzyme_autodiff(ptr @sum2, ptr @enzyme_dup, ptr %p, ptr %dp)
  ret void
}
"""


def test_vector_intrinsic_on_active_data_is_refused(tmp_path, zymase_cli):
    # vector loads, extractelement and lane-wise arithmetic differentiate
    # (tests/c/vector_values.c); a vector intrinsic without a lane-wise rule is refused (llvm.sqrt of a vector has one since session 33)
    import subprocess

    src = tmp_path / "vector.ll"
    src.write_text(VECTOR_IR)
    run = run_cli(["opt", "-O0", str(src), "-o", str(tmp_path / "out.ll")],
                  timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stderr.startswith("zymase: error: an active vector of floats reaches 'call @llvm.sin.v2f64'"), run.stderr
    assert "in function 'sum2'" in run.stderr and "Traceback" not in run.stderr
