"""Enzyme's split reverse mode, return markers and registered custom derivatives from C
(issue 24 items 1 and 2): the self-checking programs in tests/c/split_mode and
tests/c/custom_derivatives, built at -O0..-O3 (all six builds with ZYMASE_TEST_ALL_LEVELS=1), the run-time check of
a caller's tape buffer, and the errors for registered functions that do not follow
Enzyme's convention."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from c_harness import build_and_run, builds
from forking_cli import run_cli

_C = Path(__file__).resolve().parent / "c"
PROGRAMS = sorted([*(_C / "split_mode").glob("*.c"), *(_C / "custom_derivatives").glob("*.c")])
# -O0..-O3 in the default suite (issue 24), all six with ZYMASE_TEST_ALL_LEVELS=1
LEVELS = builds("-O0", "-O1", "-O2", "-O3")


def test_corpus_is_there():
    assert len(PROGRAMS) >= 7


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_split_and_custom_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


def test_tape_buffer_too_small_at_run_time(tmp_path: Path):
    # the buffer's size is known only at run time: the program stops with the reason
    (tmp_path / "small.c").write_text(
        "#include <stdlib.h>\n"
        "extern int enzyme_dup, enzyme_allocated, enzyme_tape;\n"
        "extern void __enzyme_augmentfwd(void*, ...);\n"
        "void f(double *x) { x[0] = x[0] * x[0]; }\n"
        "int main(int argc, char **argv) { double x = 2, dx = 1; int size = 8 * argc;\n"
        "  void *tape = malloc(size);\n"
        "  __enzyme_augmentfwd((void*)f, enzyme_allocated, size, enzyme_tape, tape, enzyme_dup, &x, &dx);\n"
        "  free(tape); return 0; }\n")
    proc = run_cli(["cc", "-O2", "small.c", "-o", "small"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(tmp_path / "small")], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0
    assert "tape buffer given to __enzyme_augmentfwd" in ran.stderr
    assert "smaller than the 24 bytes" in ran.stderr
    ok = subprocess.run([str(tmp_path / "small"), "a", "b"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_fwdsplit_reads_no_stale_frame_under_valgrind(level: str, tmp_path: Path):
    # issue 24 item 1: local arrays are filled again in the tangent function's own frame
    # (tests/c/split_mode/valgrind/fwdsplit_local_arrays.c says how this is checked)
    exe = tmp_path / "local_arrays"
    build = run_cli(["cc", level, "-g", str(_C / "split_mode" / "valgrind" / "fwdsplit_local_arrays.c"),
                     "-o", str(exe)], cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    ran = subprocess.run(["valgrind", "--error-exitcode=99", str(exe)], capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0 and "ok" in ran.stdout, ran.stdout + ran.stderr[-3000:]


def test_fwdsplit_null_tape_when_the_tangent_needs_one(tmp_path: Path):
    # issue 24 item 3: Enzyme's users pass a NULL tape when the tangent reads nothing
    # from it (tests/c/split_mode/fwdsplit_pointers_and_calls.c); where it reads primal
    # values, a NULL tape stops the program with the reason instead of a crash
    (tmp_path / "null.c").write_text(
        "#include <math.h>\n"
        "extern double __enzyme_fwdsplit(void*, ...);\n"
        "double f(double *x) { return sin(x[0]); }\n"
        "int main(void) { double dx = 1;\n"
        "  return __enzyme_fwdsplit((void*)f, (double*)0, &dx, (void*)0) > 2; }\n")
    proc = run_cli(["cc", "-O2", "null.c", "-o", "null"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(tmp_path / "null")], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0
    assert "__enzyme_fwdsplit was given a NULL tape, but the tangent reads primal values" in ran.stderr


def test_fwdsplit_refuses_a_tape_written_for_another_reader(tmp_path: Path):
    # issue 24 item 3: another file's __enzyme_augmentfwd of the same function writes split
    # reverse mode's tape (no __enzyme_fwdsplit there); the key that starts a split
    # forward mode tape stops the program instead of a tangent read from the wrong values
    f = "static void f(double *x) { x[0] = x[0] * x[0] * x[0]; }\n"
    (tmp_path / "a.c").write_text(
        "extern void *__enzyme_augmentfwd(void*, ...);\n" + f
        + "void *forward_pass(double *x, double *dx) { return __enzyme_augmentfwd((void*)f, x, dx); }\n")
    (tmp_path / "b.c").write_text(
        "#include <stdio.h>\nextern void __enzyme_fwdsplit(void*, ...);\n" + f
        + "void *forward_pass(double *x, double *dx);\n"
        "int main(void) { double x = 2, dx = 1; void *t = forward_pass(&x, &dx);\n"
        "  __enzyme_fwdsplit((void*)f, (double*)0, &dx, t); printf(\"%g\\n\", dx); return 0; }\n")
    proc = run_cli(["cc", "-O2", "a.c", "b.c", "-o", "two"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(tmp_path / "two")], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0, ran.stdout
    assert "the tape given to __enzyme_fwdsplit was not written for it" in ran.stderr


def test_fwdsplit_refuses_a_tape_of_another_width(tmp_path: Path):
    # one function split at two widths has a derivative pair and a tape layout per width
    # (tests/c/vector/fwdsplit_width.c); a width-3 tape given to the width-2 fwdsplit call
    # stops the program (the width is in the tape's key) instead of a misread tangent
    (tmp_path / "widths.c").write_text(
        "#include <stdio.h>\n#include <math.h>\nextern int enzyme_width, enzyme_nofree;\n"
        "typedef struct { double d[2]; } vec2;\ntypedef struct { double d[3]; } vec3;\n"
        "extern void *__enzyme_augmentfwd(void *, ...);\n"
        "extern vec2 __enzyme_fwdsplit2(void *, ...);\nextern vec3 __enzyme_fwdsplit3(void *, ...);\n"
        "double f(double *x) { return sin(x[0]) * x[0]; }\n"
        "int main(void) { double x = 0.5, d[3] = {1, 2, 3};\n"
        "  void *t3 = __enzyme_augmentfwd((void *)f, enzyme_width, 3, &x, &d[0], &d[1], &d[2]);\n"
        "  vec3 a = __enzyme_fwdsplit3((void *)f, enzyme_width, 3, enzyme_nofree, (double *)0,\n"
        "                              &d[0], &d[1], &d[2], t3);\n"
        "  double want = sin(0.5) + 0.5 * cos(0.5);\n"
        "  printf(\"%d\\n\", fabs(a.d[2] - 3 * want) < 1e-12); fflush(stdout);\n"
        "  vec2 b = __enzyme_fwdsplit2((void *)f, enzyme_width, 2, (double *)0, &d[0], &d[1], t3);\n"
        "  printf(\"%g\\n\", b.d[0]); return 0; }\n")
    proc = run_cli(["cc", "-O0", "widths.c", "-o", "widths", "-lm"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ran = subprocess.run([str(tmp_path / "widths")], capture_output=True, text=True, timeout=60)
    assert ran.returncode != 0 and ran.stdout.startswith("1\n"), ran.stdout + ran.stderr
    assert "the tape given to __enzyme_fwdsplit was not written for it" in ran.stderr, ran.stderr


@pytest.mark.parametrize("flags", LEVELS, ids=[" ".join(f) for f in LEVELS])
def test_registered_gradient_of_a_library_function(flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    # the registered function is only declared where it is differentiated
    here = _C / "custom_derivatives" / "external"
    build_and_run(here / "registered_gradient_external.c", flags, tmp_path, zymase_cli,
                  other_sources=[here / "library.c"])


# issue 24 items 1-3, split forward mode: what zymase cannot do is refused by name
_FWDSPLIT_HEAD = (
    "#include <stdlib.h>\n"
    "extern int enzyme_dup, enzyme_const, enzyme_primal_return;\n"
    "extern void *__enzyme_augmentfwd(void*, ...);\n"
    "extern double __enzyme_fwdsplit(void*, ...);\n"
    "extern void __enzyme_reverse(void*, ...);\n")
FWDSPLIT_ERRORS = {
    # one tape cannot hold what both __enzyme_reverse and __enzyme_fwdsplit read
    "fwdsplit_and_reverse": (
        "void f(double *x) { x[0] *= x[0]; }\n"
        "int main(void) { double x = 2, dx = 1; void *t = __enzyme_augmentfwd((void*)f, &x, &dx);\n"
        "  void *u = __enzyme_augmentfwd((void*)f, &x, &dx);\n"
        "  __enzyme_reverse((void*)f, &x, &dx, t);\n"
        "  return __enzyme_fwdsplit((void*)f, &x, &dx, u) > 0; }\n",
        ["'f' is differentiated by both __enzyme_fwdsplit and __enzyme_reverse"]),
    # the tape written for one activity pattern is not the one another reads
    "fwdsplit_other_activities": (
        "double f(double *x, double s) { return x[0] * s; }\n"
        "int main(void) { double x = 2, dx = 1; void *t = __enzyme_augmentfwd((void*)f, &x, &dx, enzyme_const, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)f, &x, &dx, 3.0, 1.0, t) > 0; }\n",
        ["__enzyme_augmentfwd of 'f'", "which is called with other activities"]),
    "fwdsplit_primal_return": (
        "double f(double x) { return x * x; }\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)f, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)f, enzyme_primal_return, 3.0, 1.0, t) > 0; }\n",
        ["enzyme_primal_return is not available in split mode"]),
    # a callee whose forward derivative would run its writes again
    "fwdsplit_recursive_writer": (
        "int count;\n"
        "double p(double x, int n) { count++; return n ? x * p(x, n - 1) : 1; }\n"
        "double f(double x) { return p(x, 3); }\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)f, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)f, 3.0, 1.0, t) > 0; }\n",
        ["split forward mode (__enzyme_fwdsplit) of 'f'", "the call of 'p'", "would run its primal again"]),
    # a registered gradient is for reverse mode: split forward mode needs a split derivative
    "fwdsplit_registered_gradient": (
        "__attribute__((noinline)) double g(double x) { return x * x; }\n"
        "double g_aug(double x) { return x * x; }\n"
        "double g_grad(double x, double d) { return 2 * x * d; }\n"
        "void *__enzyme_register_gradient_g[3] = {(void*)g, (void*)g_aug, (void*)g_grad};\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)f, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)f, 3.0, 1.0, t) > 0; }\n",
        ["'g' has a registered gradient or forward derivative", "__enzyme_register_splitderivative_g"]),
    "splitderivative_of_pointers": (
        "__attribute__((noinline)) void g(double *x) { x[0] *= x[0]; }\n"
        "void *g_aug(double *x, double *dx) { g(x); return 0; }\n"
        "void g_fs(double *x, double *dx, void *t) { }\n"
        "void *__enzyme_register_splitderivative_g[3] = {(void*)g, (void*)g_aug, (void*)g_fs};\n"
        "void f(double *x) { g(x); }\n"
        "int main(void) { double x = 2, dx = 1; void *t = __enzyme_augmentfwd((void*)f, &x, &dx);\n"
        "  return __enzyme_fwdsplit((void*)f, &x, &dx, t) > 0; }\n",
        ["splitderivative_of_pointers.c:10:", "'g' has a registered split derivative and takes or returns a pointer"]),
    "splitderivative_signature": (
        "__attribute__((noinline)) double g(double x) { return x * x; }\n"
        "double g_aug(double x) { return x * x; }\n"
        "double g_fs(double x) { return 2 * x; }\n"
        "void *__enzyme_register_splitderivative_g[3] = {(void*)g, (void*)g_aug, (void*)g_fs};\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)f, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)f, 3.0, 1.0, t) > 0; }\n",
        ["splitderivative_signature.c:10:", "'g_fs', registered as the split forward derivative of 'g'",
         "2 parameters"]),
    "splitderivative_wrong_size": (
        "double g(double x) { return x * x; }\n"
        "void *__enzyme_register_splitderivative_g[2] = {(void*)g, (void*)g};\n"
        "int main(void) { void *t = __enzyme_augmentfwd((void*)g, 3.0);\n"
        "  return __enzyme_fwdsplit((void*)g, 3.0, 1.0, t) > 0; }\n",
        ["registration '__enzyme_register_splitderivative_g' must be an array of 3 function addresses"]),
}


@pytest.mark.parametrize("case", sorted(FWDSPLIT_ERRORS))
def test_split_forward_mode_refusal(case: str, tmp_path: Path):
    source, needles = FWDSPLIT_ERRORS[case]
    (tmp_path / f"{case}.c").write_text(_FWDSPLIT_HEAD + source)
    proc = run_cli(["cc", "-O0", "-g", f"{case}.c", "-o", case], cwd=tmp_path)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    errors = [line for line in proc.stderr.splitlines() if line.startswith("zymase: error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr, proc.stderr
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])
    # located at the call, except a registration that is not three functions (a global)
    assert (f"{case}.c:" in errors[0] or case.endswith("wrong_size")) and "hint:" in errors[0], errors[0]
    assert not (tmp_path / case).exists()
