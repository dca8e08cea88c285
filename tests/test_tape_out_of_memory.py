"""A tape that cannot grow (malloc/realloc return NULL) ends the program with zymase's
message and SIGABRT, not a segfault at the first store into it: the program runs under a
256 MB address-space limit with a loop that would tape gigabytes, once with a LIFO cache
(a while loop with a data-dependent exit) and once with an indexed cache (a counted
loop). Before the check both died of SIGSEGV. A reserve whose byte count wraps around
2^64 is reported the same way (it segfaulted until session 32)."""

from __future__ import annotations

import signal
import subprocess

import pytest
from forking_cli import run_cli

PROGRAM = r"""
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
extern int enzyme_dup, enzyme_const;
void __enzyme_autodiff(void *, ...);
static double lifo(double *x, long n) {
    double t = x[0], s = 0;
    long i = 0;
    while (t < 1e300 && i < n) { t = sin(t) * 1.0000001 + 1.5; s += t * t; i++; }
    return s;
}
static double indexed(double *x, long n) {
    double t = x[0], s = 0;
    for (long i = 0; i < n; i++) { t = sin(t) * 1.0000001 + 1.5; s += t * t; }
    return s;
}
int main(int argc, char **argv) {
    long n = atol(argv[2]);
    double x[1] = {0.3}, dx[1] = {0};
    if (argv[1][0] == 'l')
        __enzyme_autodiff((void *)lifo, enzyme_dup, x, dx, enzyme_const, n);
    else
        __enzyme_autodiff((void *)indexed, enzyme_dup, x, dx, enzyme_const, n);
    printf("d = %.17g\n", dx[0]);
    return 0;
}
"""
LIMIT_KB = 256 << 10


def _limited(argv: list[str]) -> list[str]:
    """``argv`` run under the address-space limit, set by the shell (a ``preexec_fn``
    makes subprocess fork for real, which JAX, loaded in the same test worker, warns may
    deadlock)."""
    return ["bash", "-c", f'ulimit -v {LIMIT_KB} && exec "$@"', "limited", *argv]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("oom")
    (tmp / "oom.c").write_text(PROGRAM)
    build = run_cli(["cc", "-O2", str(tmp / "oom.c"), "-o", str(tmp / "oom"), "-lm"], timeout=300)
    assert build.returncode == 0, build.stderr
    return tmp / "oom"


@pytest.mark.parametrize("cache", ["lifo", "indexed"])
def test_a_tape_that_cannot_grow_is_a_clear_error(program, cache):
    small = subprocess.run([str(program), cache, "1000"], capture_output=True, text=True, timeout=60)
    assert small.returncode == 0 and small.stdout.startswith("d = "), small.stderr
    # 10^9 turns: 8 GB of tape, far past the limit
    run = subprocess.run(_limited([str(program), cache, "1000000000"]), capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == -signal.SIGABRT, (run.returncode, run.stderr[-2000:])
    assert run.stderr.startswith("zymase: error: out of memory while a derivative recorded its tape"), run.stderr
    assert "--tape-limit" in run.stderr


def test_a_reserve_whose_size_wraps_is_a_clear_error(program):
    """The counted loop's reserve is ``count * 8`` bytes in i64: with 2^61 + 1 turns it
    wrapped to 8, and the forward sweep wrote its tape past that buffer (SIGSEGV, session
    32); a product that wraps now asks for more than any allocator gives (no limit needed)."""
    run = subprocess.run([str(program), "indexed", str((1 << 61) + 1)], capture_output=True, text=True, timeout=60)
    assert run.returncode == -signal.SIGABRT, (run.returncode, run.stderr[-2000:])
    assert run.stderr.startswith("zymase: error: out of memory while a derivative recorded its tape"), run.stderr
