"""The restrict promises of inlined callees survive differentiation (zymase.llvm.noalias_scopes).

LLVM's inliner turns a callee's ``restrict`` parameters into scoped-noalias metadata and
``llvm.experimental.noalias.scope.decl`` calls. The reader keeps both, the writer prints
them back, and the reverse sweep gives each shadow access the twin of its primal's
scopes. The reverse of an in-place butterfly (``a[j], b[j] = a[j] + b[j], (a[j] - b[j]) c``
through two restrict pointers into one array) then reads each adjoint and writes it
back once: without the promise LLVM cannot tell ``da[j]`` from ``db[j]``, and keeps the
zero written into the one and the re-read of the other.

Copies of a region keep their own promises: zymase's inliner renames every scope of an
inlined body, and peeling renames the scopes a peeled iteration declares (as LLVM's
unroller does). The chain test below is what goes wrong otherwise: consecutive calls
overlap (one call's ``a`` is the next call's ``b``), which restrict allows, and a promise
stretched over two calls would let LLVM reorder across them.
"""

from __future__ import annotations

import re

import pytest
from c_harness import build_and_run, emit_llvm, function_ir

from zymase.ir import ModuleOp
from zymase.llvm.noalias_scopes import SCOPE_DECL, SRC_ALIAS_SCOPE, SRC_NOALIAS, is_scope_decl
from zymase.llvm.reader import read_llvm_ir
from zymase.llvm.writer import write_llvm_ir
from zymase.transforms.inline import inline_calls

BUTTERFLY = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
enum { N = 64 };

static void butterfly(double *restrict a, double *restrict b, int m, double c) {
    for (int j = 0; j < m; j++) {
        double u = a[j], v = b[j];
        a[j] = u + v;
        b[j] = (u - v) * c;
    }
}

/* log2(N) in-place passes, then a weighted sum of squares */
double f(double *restrict x, const double *restrict w) {
    for (int h = N / 2; h >= 1; h /= 2)
        for (int o = 0; o < N; o += 2 * h)
            butterfly(x + o, x + o + h, h, 0.5 + 0.25 * h / N);
    double s = 0.0;
    for (int i = 0; i < N; i++)
        s += w[i] * x[i] * x[i];
    return s;
}

__attribute__((noinline)) void grad(double *x, double *dx, const double *w) {
    __enzyme_autodiff((void *)f, enzyme_dup, x, dx, enzyme_const, w);
}

int main(void) {
    double x0[N], x[N], dx[N], w[N];
    for (int i = 0; i < N; i++) {
        x0[i] = sin(1.0 + i);
        w[i] = 1.0 + 0.5 * cos(0.3 * i);
    }
    memcpy(x, x0, sizeof x);
    for (int i = 0; i < N; i++) dx[i] = 0.0;
    grad(x, dx, w);
    double worst = 0.0;
    for (int i = 0; i < N; i++) {
        double h = 1e-6, xp[N], xm[N];
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        xp[i] += h;
        xm[i] -= h;
        double fd = (f(xp, w) - f(xm, w)) / (2 * h);
        double err = fabs(fd - dx[i]) / (1.0 + fabs(fd));
        if (err > worst) worst = err;
    }
    printf("%g\n", worst);
    return !(worst < 1e-7);
}
""".replace("#include <stdlib.h>", "#include <stdlib.h>\n#include <string.h>")

CHAIN = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_dup;
enum { N = 40 };

/* within one call a and b are different elements */
static void step(double *restrict a, const double *restrict b) { a[0] = a[0] * b[0] + sin(b[0]); }

/* call i writes x[i + 1] and reads x[i], which call i - 1 wrote */
double f(double *x) {
    for (int i = 0; i + 1 < N; i++)
        step(x + i + 1, x + i);
    return x[N - 1];
}

__attribute__((noinline)) void grad(double *x, double *dx) { __enzyme_autodiff((void *)f, enzyme_dup, x, dx); }

int main(void) {
    double x0[N], x[N], dx[N];
    for (int i = 0; i < N; i++) x0[i] = 0.9 + 0.1 * cos(i);
    /* the primal, element by element, as a reference */
    double ref[N];
    memcpy(ref, x0, sizeof ref);
    for (int i = 0; i + 1 < N; i++) ref[i + 1] = ref[i + 1] * ref[i] + sin(ref[i]);
    memcpy(x, x0, sizeof x);
    double value = f(x);
    memcpy(x, x0, sizeof x);
    memset(dx, 0, sizeof dx);
    grad(x, dx);
    double worst = fabs(value - ref[N - 1]) / fabs(ref[N - 1]);
    for (int i = 0; i < N; i++) {
        double h = 1e-6, xp[N], xm[N];
        memcpy(xp, x0, sizeof xp);
        memcpy(xm, x0, sizeof xm);
        xp[i] += h;
        xm[i] -= h;
        double fd = (f(xp) - f(xm)) / (2 * h);
        double err = fabs(fd - dx[i]) / (1.0 + fabs(fd));
        if (err > worst) worst = err;
    }
    printf("%g\n", worst);
    return !(worst < 1e-6);
}
"""


@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_in_place_butterflies_through_restrict_pointers(tmp_path, zymase_cli, opt):
    src = tmp_path / "butterfly.c"
    src.write_text(BUTTERFLY)
    build_and_run(src, [opt], tmp_path, zymase_cli)


@pytest.mark.parametrize("opt", ["-O2", "-O3"])
def test_the_reverse_of_an_in_place_butterfly_writes_each_adjoint_once(tmp_path, zymase_cli, opt):
    src = tmp_path / "butterfly.c"
    src.write_text(BUTTERFLY)
    body = function_ir(emit_llvm(src, [opt], tmp_path, zymase_cli), "grad")
    # the only zeros stored would be the adjoints the stores of the passes reset
    zero_stores = re.findall(r"store (?:double 0\.0+e\+00|<\d+ x double> zeroinitializer)", body)
    assert not zero_stores, body
    assert "@llvm.experimental.noalias.scope.decl" in body


# forward mode: the tangents' accesses sit next to the primal's, in the same loop
CHAIN_FORWARD = CHAIN.replace("extern void __enzyme_autodiff(void *, ...);", "extern double __enzyme_fwddiff(void *, ...);").replace(
    "__attribute__((noinline)) void grad(double *x, double *dx) { __enzyme_autodiff((void *)f, enzyme_dup, x, dx); }",
    """/* the gradient, one tangent direction at a time */
__attribute__((noinline)) void grad(double *x, double *dx) {
    double x0[N], t[N], dir[N];
    memcpy(x0, x, sizeof x0);
    for (int i = 0; i < N; i++) {
        memset(dir, 0, sizeof dir);
        dir[i] = 1.0;
        memcpy(t, x0, sizeof t);
        dx[i] = __enzyme_fwddiff((void *)f, enzyme_dup, t, dir);
    }
}""",
)


@pytest.mark.parametrize("program", [CHAIN, CHAIN_FORWARD], ids=["reverse", "forward"])
@pytest.mark.parametrize("opt", ["-O0", "-O1", "-O2", "-O3"])
def test_overlapping_consecutive_calls_keep_their_order(tmp_path, zymase_cli, opt, program):
    src = tmp_path / "chain.c"
    src.write_text(program)
    build_and_run(src, [opt], tmp_path, zymase_cli)


SCOPED = """
define void @k(ptr %a, ptr %b) {
  call void @llvm.experimental.noalias.scope.decl(metadata !0)
  call void @llvm.experimental.noalias.scope.decl(metadata !3)
  %u = load double, ptr %b, align 8, !alias.scope !3, !noalias !0
  store double %u, ptr %a, align 8, !alias.scope !0, !noalias !3
  ret void
}
define void @two(ptr %x) {
  %y = getelementptr double, ptr %x, i64 1
  call void @k(ptr %x, ptr %y)
  call void @k(ptr %y, ptr %x)
  ret void
}
declare void @llvm.experimental.noalias.scope.decl(metadata)
!0 = !{!1}
!1 = distinct !{!1, !2, !"k: %a"}
!2 = distinct !{!2, !"k"}
!3 = !{!4}
!4 = distinct !{!4, !2, !"k: %b"}
"""


def _function(module: ModuleOp, name: str):
    return next(op for op in module.body.block.ops if op.name == "llvm.func" and op.sym_name.data == name)


def _scopes(op) -> set[str]:
    return {a.data for key in (SRC_ALIAS_SCOPE, SRC_NOALIAS) if key in op.attributes for a in op.attributes[key].data}


def test_scopes_and_their_declarations_are_read_and_written_back():
    module = read_llvm_ir(SCOPED)
    k = _function(module, "k")
    decls = [op for op in k.walk() if is_scope_decl(op)]
    load = next(op for op in k.walk() if op.name == "llvm.load")
    assert len(decls) == 2 and load.attributes[SRC_ALIAS_SCOPE].data[0].data == decls[1].attributes[SCOPE_DECL].data
    out = write_llvm_ir(module)
    # LLVM parses the output again, and the accesses keep the two scopes of one domain
    again = read_llvm_ir(out)
    load = next(op for op in _function(again, "k").walk() if op.name == "llvm.load")
    store = next(op for op in _function(again, "k").walk() if op.name == "llvm.store")
    assert load.attributes[SRC_ALIAS_SCOPE] == store.attributes[SRC_NOALIAS]
    assert load.attributes[SRC_NOALIAS] == store.attributes[SRC_ALIAS_SCOPE]
    assert out.count("call void @llvm.experimental.noalias.scope.decl(metadata !") == 2
    domains = re.findall(r'= distinct !\{![0-9]+, !"([^"]*)"\}', out)
    assert len(domains) == 1, out


def test_each_inlined_copy_gets_its_own_scopes():
    module = read_llvm_ir(SCOPED)
    two = _function(module, "two")
    k = _function(module, "k")
    assert inline_calls(two.body, lambda op: k if op.name == "llvm.call" else None, lambda call, callee: True) == 2
    decls = [op.attributes[SCOPE_DECL].data for op in two.walk() if is_scope_decl(op)]
    assert len(decls) == 4 and len(set(decls)) == 4
    copies = [_scopes(op) for op in two.walk() if op.name in ("llvm.load", "llvm.store")]
    assert len(copies) == 4
    assert copies[0] == copies[1] and copies[2] == copies[3] and not copies[0] & copies[2]
    assert set(decls) == copies[0] | copies[2]


def test_a_peeled_iteration_renames_the_scopes_it_declares():
    from zymase.llvm.noalias_scopes import freshen_scopes

    module = read_llvm_ir(SCOPED)
    body = list(_function(module, "k").walk())
    before = {n for op in body for n in _scopes(op)}
    # the declarations are in the copy: both scopes become the copy's own
    freshen_scopes(body, "peel0", declared_only=True)
    after = {n for op in body for n in _scopes(op)}
    assert len(after) == 2 and not after & before
    # a copy without the declarations shares the scopes of the region around it
    module = read_llvm_ir(SCOPED)
    accesses = [op for op in _function(module, "k").walk() if op.name in ("llvm.load", "llvm.store")]
    freshen_scopes(accesses, "peel1", declared_only=True)
    assert {n for op in accesses for n in _scopes(op)} == before
