"""What the reverse sweep reads again instead of taping, and loop counts it computes
instead of taping.

A buffer the function allocates, fills, reads in a loop that needs the values in
reverse (a sum of cubes), and frees on every path: its free moves to the reverse
sweep (ReverseGenerator._find_deferred_frees), and as nothing writes the buffer after
that loop, the reverse sweep re-reads it (_unwritten_after): no per-element tape. A
buffer overwritten after the loop, or freed on only some paths, is taped as before.
Every gradient is checked against central differences by the program itself.
"""

from __future__ import annotations

import os
import subprocess

import pytest
from forking_cli import run_cli

REREAD = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes;

/* buf[i] is needed by the reverse of the cube sum; nothing writes buf after that loop,
   and the free is on every path: the reverse sweep reads buf again */
__attribute__((noinline)) static double reread(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) buf[i] = x[i] * x[(i + 1) % n];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * buf[i] * buf[i];
    free(buf);
    return s;
}

/* the same, but buf is overwritten after the cube sum: its values must be taped */
__attribute__((noinline)) static double rewritten(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) buf[i] = x[i] * x[(i + 1) % n];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * buf[i] * buf[i];
    for (int i = 0; i < n; i++) buf[i] = s;
    s += buf[n / 2];
    free(buf);
    return s;
}

/* the free is not on every path (the buffer leaks on one): it stays in the forward sweep */
__attribute__((noinline)) static double leaky(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) buf[i] = x[i] * x[(i + 1) % n];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * buf[i] * buf[i];
    if (s > 1e300) return s;
    free(buf);
    return s;
}

typedef double (*objective)(const double *, int);

static void run(const char *name, objective f, void *fp, double *x, double *dx, int n) {
    for (int i = 0; i < n; i++) dx[i] = 0.0;
    long before = __zymase_tape_bytes;
    if (fp == (void *)reread)
        __enzyme_autodiff((void *)reread, enzyme_dup, x, dx, enzyme_const, n);
    else if (fp == (void *)rewritten)
        __enzyme_autodiff((void *)rewritten, enzyme_dup, x, dx, enzyme_const, n);
    else
        __enzyme_autodiff((void *)leaky, enzyme_dup, x, dx, enzyme_const, n);
    long bytes = __zymase_tape_bytes - before;
    double worst = 0.0;
    for (int i = 0; i < n; i++) {
        double h = 1e-6, keep = x[i];
        x[i] = keep + h; double up = f(x, n);
        x[i] = keep - h; double down = f(x, n);
        x[i] = keep;
        double fd = (up - down) / (2 * h), err = fabs(fd - dx[i]) / fmax(1.0, fabs(fd));
        if (!(err <= worst)) worst = err;
    }
    printf("%s %ld %.3e\n", name, bytes, worst);
}

int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    double *x = malloc(n * 8), *dx = malloc(n * 8);
    for (int i = 0; i < n; i++) x[i] = 0.3 + 0.1 * sin(3.0 * i);
    run("reread", reread, (void *)reread, x, dx, n);
    run("rewritten", rewritten, (void *)rewritten, x, dx, n);
    run("leaky", leaky, (void *)leaky, x, dx, n);
    return 0;
}
"""

PASSES = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;

/* Stockham-like passes: the innermost loop's bound m doubles from pass to pass; LLVM widens
   it in that loop's guarded preheader */
__attribute__((noinline)) double passes(const double *restrict x, double *restrict y, int n) {
    double s = 0.0;
    for (int l = n / 2, m = 1; l >= 1; l /= 2, m *= 2)
        for (int j = 0; j < l; j++)
            for (int k = 0; k < m; k++)
                s += x[j * m + k] * x[j * m + k + l * m] * y[k];
    return s;
}

int main(void) {
    double x[64], dx[64] = {0}, y[64];
    for (int i = 0; i < 64; i++) x[i] = sin(i), y[i] = cos(i);
    __enzyme_autodiff((void *)passes, enzyme_dup, x, dx, enzyme_const, y, enzyme_const, 32);
    int failures = 0;
    for (int i = 0; i < 32; i++) {
        double h = 1e-6, keep = x[i];
        x[i] = keep + h; double up = passes(x, y, 32);
        x[i] = keep - h; double down = passes(x, y, 32);
        x[i] = keep;
        double fd = (up - down) / (2 * h);
        if (!(fabs(fd - dx[i]) <= 1e-6 * fmax(1.0, fabs(fd)))) {
            printf("FAIL x[%d]: %.17g, finite difference %.17g\n", i, dx[i], fd);
            failures++;
        }
    }
    return failures != 0;
}
"""


def _build(tmp_path, zymase_cli, source: str, name: str, opt: str, env=None) -> subprocess.CompletedProcess:
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    exe = tmp_path / name
    build = run_cli(["cc", opt, "-g", str(src), "-o", str(exe), "-lm"], env=dict(os.environ, **(env or {})),
                    cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    return build


def _per_call(exe, n: int) -> dict[str, tuple[int, float]]:
    run = subprocess.run([str(exe), str(n)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    out = {}
    for line in run.stdout.splitlines():
        name, taped, err = line.split()
        out[name] = (int(taped), float(err))
    return out


@pytest.mark.parametrize("opt", ["-O1", "-O2", "-O3"])
def test_a_buffer_nothing_writes_after_its_last_read_is_read_again_not_taped(tmp_path, zymase_cli, opt):
    _build(tmp_path, zymase_cli, REREAD, "reread", opt, {"ZYMASE_TAPE_STATS": "1"})
    small, large = _per_call(tmp_path / "reread", 10), _per_call(tmp_path / "reread", 1010)
    for name in ("reread", "rewritten", "leaky"):
        assert small[name][1] < 1e-6 and large[name][1] < 1e-6, (name, small[name], large[name])
    per_element = {name: (large[name][0] - small[name][0]) / 1000 for name in small}
    assert per_element["reread"] == 0, per_element
    # overwritten after the read, or the free not on every path: buf[i] is taped
    assert per_element["rewritten"] >= 8 and per_element["leaky"] >= 8, per_element


def test_a_loop_count_widened_in_a_guarded_preheader_is_computed_not_taped(tmp_path, zymase_cli):
    # the k loop's bound is zext(m), computed in the preheader that the guard m > 0
    # protects; the block after the loop is not dominated by it, but by m: the reverse
    # sweep widens m again there instead of taping the k loop's iteration count
    build = _build(tmp_path, zymase_cli, PASSES, "passes", "-O2", {"ZYMASE_DEBUG_TAPE": "1"})
    taped = [line for line in build.stderr.splitlines() if line.startswith("zymase: tape:")]
    assert taped and not [line for line in taped if "enzyme.get" in line or "passes.c:14:" in line], taped
    run = subprocess.run([str(tmp_path / "passes")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr


OPAQUE_CALLS = r"""
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
extern void __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_dup;
extern long __zymase_tape_bytes;

double weights[1024];
/* defined in another file: the compiler sees only these declarations */
void scale_weights(void);                          /* writes the global weights */
void scale_weights_by(const double *factor);       /* writes weights, reads *factor */
double peek_weight(int i) __attribute__((pure));   /* reads memory, writes nothing */

/* weights[i] is needed by the reverse of the sum; the call after the loop changes weights,
   so the values must be taped, not read again */
__attribute__((noinline)) double changed_by_call(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += weights[i] * x[i] * x[i];
    scale_weights();
    return s;
}

/* the same through a function defined here that stores nothing itself */
__attribute__((noinline)) static void rescale(void) { scale_weights(); }
__attribute__((noinline)) double changed_by_wrapped_call(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += weights[i] * x[i] * x[i];
    rescale();
    return s;
}

__attribute__((noinline)) double changed_by_call_with_pointer(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += weights[i] * x[i] * x[i];
    double f = 3.0;
    scale_weights_by(&f);
    return s;
}

/* a pure function writes nothing: weights may be read again */
__attribute__((noinline)) double read_by_call(const double *x, int n) {
    double s = 0.0;
    for (int i = 0; i < n; i++) s += weights[i] * x[i] * x[i];
    return s + peek_weight(0);
}

/* a buffer of the function's own whose address escaped to a global: an opaque call may
   write it (taped); one whose address stays private cannot be (read again) */
double *published, scratch[1024];
void overwrite_published(int n);
__attribute__((noinline)) static double escaped_buffer(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    published = buf;
    for (int i = 0; i < n; i++) buf[i] = weights[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * x[i];
    overwrite_published(n);
    published = scratch;  /* not left dangling: the next malloc may return the same memory */
    free(buf);
    return s;
}

__attribute__((noinline)) static double private_buffer(const double *x, int n) {
    double *buf = malloc(n * sizeof(double));
    for (int i = 0; i < n; i++) buf[i] = weights[i] * x[i];
    double s = 0.0;
    for (int i = 0; i < n; i++) s += buf[i] * x[i];
    overwrite_published(n);
    free(buf);
    return s;
}

static void reset(int n) { for (int i = 0; i < n; i++) weights[i] = 0.5 + 0.25 * cos(i); }

int main(int argc, char **argv) {
    int n = atoi(argv[1]);
    double *x = malloc(n * 8), *dx = malloc(n * 8);
    for (int i = 0; i < n; i++) x[i] = 0.3 + 0.1 * sin(3.0 * i);
    const char *names[6] = {"changed_by_call", "changed_by_call_with_pointer", "read_by_call", "escaped_buffer",
                            "private_buffer", "changed_by_wrapped_call"};
    published = scratch;
    for (int k = 0; k < 6; k++) {
        reset(n);
        for (int i = 0; i < n; i++) dx[i] = 0.0;
        long before = __zymase_tape_bytes;
        if (k == 0)
            __enzyme_autodiff((void *)changed_by_call, enzyme_dup, x, dx, enzyme_const, n);
        else if (k == 1)
            __enzyme_autodiff((void *)changed_by_call_with_pointer, enzyme_dup, x, dx, enzyme_const, n);
        else if (k == 2)
            __enzyme_autodiff((void *)read_by_call, enzyme_dup, x, dx, enzyme_const, n);
        else if (k == 3)
            __enzyme_autodiff((void *)escaped_buffer, enzyme_dup, x, dx, enzyme_const, n);
        else if (k == 4)
            __enzyme_autodiff((void *)private_buffer, enzyme_dup, x, dx, enzyme_const, n);
        else
            __enzyme_autodiff((void *)changed_by_wrapped_call, enzyme_dup, x, dx, enzyme_const, n);
        long bytes = __zymase_tape_bytes - before;
        reset(n);  /* d/dx_i = 2 w_i x_i with the weights as they were on entry */
        double worst = 0.0;
        for (int i = 0; i < n; i++) {
            double err = fabs(dx[i] - 2.0 * weights[i] * x[i]);
            if (!(err <= worst)) worst = err;
        }
        printf("%s %ld %.3e\n", names[k], bytes, worst);
    }
    return 0;
}
"""

OPAQUE_DEFINITIONS = r"""
extern double weights[1024];
void scale_weights(void) { for (int i = 0; i < 1024; i++) weights[i] = 3.0 * weights[i] + 1.0; }
void scale_weights_by(const double *factor) { for (int i = 0; i < 1024; i++) weights[i] *= *factor; }
double peek_weight(int i) { return weights[i]; }
extern double *published;
void overwrite_published(int n) { for (int i = 0; i < n; i++) published[i] = 100.0; }
"""


@pytest.mark.parametrize("opt", ["-O1", "-O2"])
def test_memory_an_opaque_call_may_write_is_taped_not_read_again(tmp_path, zymase_cli, opt):
    # the called functions are defined in another file: only their attributes say whether
    # they write globals, or a buffer whose address the function published (a wrong
    # derivative if the reverse sweep read the changed values)
    (tmp_path / "calls.c").write_text(OPAQUE_CALLS)
    (tmp_path / "defs.c").write_text(OPAQUE_DEFINITIONS)
    exe = tmp_path / "calls"
    build = run_cli(["cc", opt, "calls.c", "defs.c", "-o", str(exe), "-lm"],
                    env=dict(os.environ, ZYMASE_TAPE_STATS="1"),
                    cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    small, large = _per_call(exe, 10), _per_call(exe, 1010)
    for name in small:
        assert small[name][1] < 1e-12 and large[name][1] < 1e-12, (name, small[name], large[name])
    per_element = {name: (large[name][0] - small[name][0]) / 1000 for name in small}
    for name in ("changed_by_call", "changed_by_wrapped_call", "changed_by_call_with_pointer"):
        assert per_element[name] >= 8, per_element
    assert per_element["read_by_call"] == 0, per_element
    # both tape x[i] (an argument the call may write); only the escaped buffer tapes buf[i]
    assert per_element["escaped_buffer"] >= per_element["private_buffer"] + 8, per_element
