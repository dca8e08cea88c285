"""The shadow of a byte global holding an arena of nodes (pointers and doubles at
run-time offsets) next to a double of state: a forward call left its tangents in the
nodes' shadow, which the next reverse call read back as adjoints (session 32: d/dx2 1.7
for 0.7 at every level). ``transforms/global_shadow_reset`` now zeroes the bytes type
analysis of the called derivative says hold floats. (An inline program, not one of
tests/c/memory: clang -O2 vectorizes its node loop into an ``inttoptr <2 x i64>``, which
the LLVM reader's round trip of clang's optimized IR, tests/python/test_llvm_roundtrip.py,
does not read; zymase's own pipeline never vectorizes before AD.)"""

from __future__ import annotations

import subprocess

import pytest
from forking_cli import run_cli

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
#include <stddef.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static _Alignas(16) unsigned char arena[256];
struct node { struct node *next; double v; };
static double in_arena(const double *x, int n) {
    double *acc = (double *)arena;
    double s = *acc * x[0];              /* state from the call before: a constant */
    size_t used = 16;
    struct node *head = 0;
    for (int i = 0; i < n; i++) {
        struct node *q = (struct node *)(arena + used);
        used += sizeof *q;
        q->v = x[i];
        q->next = head;
        head = q;
    }
    for (struct node *q = head; q; q = q->next)
        s += q->v * x[1];
    *acc = x[1] * x[1];
    return s;
}
int main(int argc, char **argv) {
    (void)argv;
    int n = argc + 3, failures = 0;
    double x[4] = {0.3, 0.7, -0.4, 1.1};
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < n; i++) {
            double sum = x[0] + x[1] + x[2] + x[3], t[4] = {0}, dx[4] = {0};
            t[i] = 1.0;
            double acc0 = *(double *)arena;
            double want = (i == 0 ? acc0 : 0.0) + x[1] + (i == 1 ? sum : 0.0);
            double fwd = __enzyme_fwddiff((void *)in_arena, enzyme_dup, x, t, enzyme_const, n);
            acc0 = *(double *)arena;
            double want_rev = (i == 0 ? acc0 : 0.0) + x[1] + (i == 1 ? sum : 0.0);
            __enzyme_autodiff((void *)in_arena, enzyme_dup, x, dx, enzyme_const, n);
            failures += fabs(fwd - want) > 1e-12;
            failures += fabs(dx[i] - want_rev) > 1e-12;
            printf("%d %d fwd %.17g want %.17g rev %.17g want %.17g\n", round, i, fwd, want, dx[i], want_rev);
        }
    printf("%d failures\n", failures);
    return failures != 0;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_arena_in_a_byte_global_forward_then_reverse(tmp_path, level):
    (tmp_path / "arena.c").write_text(PROGRAM)
    build = run_cli(["cc", level, str(tmp_path / "arena.c"), "-o", str(tmp_path / "arena"), "-lm"], timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "arena")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.endswith("0 failures\n"), run.stdout + run.stderr
