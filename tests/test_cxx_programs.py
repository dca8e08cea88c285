"""The self-checking C++ programs in tests/cxx (issue 24 item 3): C++ as people write
it, compiled with exceptions on (clang's default) by ``zymase cc``, each derivative
compared with a closed form. Built at ``-O0`` and ``-O2`` (issue 24; all six builds of
``c_harness.ALL_BUILDS`` with ZYMASE_TEST_ALL_LEVELS=1), except where a program needs
the optimizer.

Also here: an exception thrown through a derivative ends the program with zymase's
message, a truly dynamic indirect call is refused at compile time in C++ terms, and
``zymase c++`` / ``zymase cc -x c++`` compile any file name as C++.
"""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from c_harness import COMPILE_TIMEOUT, RUN_TIMEOUT, build_and_run, build_ids, builds, emit_llvm
from forking_cli import run_cli

CXX_DIR = Path(__file__).resolve().parent / "cxx"
PROGRAMS = sorted(CXX_DIR.glob("*.cpp"))

# Programs built only after the optimizer has run: library_mix works at -O0 but its
# unoptimized std::map and std::function code takes minutes to go through zymase, too
# long for the suite.
NEEDS_OPTIMIZER = {"library_mix"}
UNOPTIMIZED = (["-O0"], ["-O2", "--no-preopt"])


def test_cxx_corpus_is_there():
    assert len(PROGRAMS) >= 8, f"expected at least 8 programs in {CXX_DIR}"


CASES = [(program, flags) for program in PROGRAMS for flags in builds("-O0", "-O2")
         if not (program.stem in NEEDS_OPTIMIZER and flags in UNOPTIMIZED)]


@pytest.mark.parametrize(("program", "flags"), CASES,
                         ids=[f"{p.stem}-{build_ids([f])[0]}" for p, f in CASES])
def test_cxx_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, flags, tmp_path, zymase_cli)


def _build(source: Path, flags: list[str], tmp_path: Path, command: str = "cc") -> Path:
    exe = tmp_path / source.stem
    build = run_cli([command, *flags, str(source), "-o", str(exe)], timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    return exe


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_exception_through_derivative_is_a_clear_runtime_error(level: str, tmp_path: Path):
    # issue 24 item 3: f throws while its derivative runs; main catches everything, so
    # without the guard the program would go on (and print FAIL, exit 0)
    exe = _build(CXX_DIR / "throw_through.cpp", [level], tmp_path)
    run = subprocess.run([str(exe), "throw"], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                         stdin=subprocess.DEVNULL)
    assert run.returncode != 0
    assert "FAIL" not in run.stdout
    assert ("zymase: error: an exception was thrown through differentiated code 'f(double)'"
            in run.stderr), run.stderr


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_callee_chosen_at_run_time_is_differentiated(level: str, tmp_path: Path):
    # issue 24 item 3: the callee depends on argv (square, or sine with argument 1); the
    # derivative of 2 g(x) at 1.5 follows the choice
    exe = _build(CXX_DIR / "with_arguments" / "dynamic_call.cpp", [level], tmp_path)
    for args, want in (([], 2 * 2 * 1.5), (["1"], 2 * math.cos(1.5))):
        run = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                             stdin=subprocess.DEVNULL)
        assert run.returncode == 0, run.stderr
        assert abs(float(run.stdout) - want) <= 1e-5 * abs(want), (args, run.stdout)


UNSEEN_CALLEE = r"""
#include <dlfcn.h>
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
extern int enzyme_const;
static double twice(double x) { return 2 * x; }
double (*volatile known)(double) = twice;   // the only function whose address is taken
double apply(double x, double (*g)(double)) { return g(x) * x; }
int main(int argc, char **argv) {
  double (*g)(double) = argc > 1 ? (double (*)(double))dlsym(RTLD_DEFAULT, argv[1]) : known;
  printf("%.17g\n", __enzyme_autodiff((void *)apply, 1.5, enzyme_const, g));
  return 0;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_indirect_call_to_a_function_zymase_did_not_see_aborts(level: str, tmp_path: Path):
    # issue 24 item 3: the call through g becomes a choice among the functions whose
    # address the file takes (twice); a pointer to anything else (cbrt, found at run
    # time) has no derivative here, so the derivative stops with a message instead of
    # returning a wrong number
    source = tmp_path / "unseen.c"
    source.write_text(UNSEEN_CALLEE)
    exe = _build(source, [level], tmp_path)
    known = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert known.returncode == 0 and float(known.stdout) == 6.0, known.stdout + known.stderr
    unseen = subprocess.run([str(exe), "cbrt"], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                            stdin=subprocess.DEVNULL)
    assert unseen.returncode != 0 and unseen.stdout == ""
    assert "zymase: error:" in unseen.stderr and "indirect call in differentiated code 'apply'" in unseen.stderr


def test_indirect_call_no_function_can_answer_is_refused(tmp_path: Path):
    # no function of this file has g's type and has its address taken: refused at compile
    # time, naming the construct, the function and the line
    source = tmp_path / "nothing.cpp"
    source.write_text(UNSEEN_CALLEE.replace("static double twice(double x) { return 2 * x; }\n", "")
                      .replace("double (*volatile known)(double) = twice;   // the only function whose address is taken\n",
                               "double (*volatile known)(double);\n"))
    build = run_cli(["cc", "-O0", str(source), "-o", str(tmp_path / "a.out")], timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 1
    assert "indirect call" in build.stderr and "in function 'apply(double, double (*)(double))'" in build.stderr
    line = source.read_text().splitlines().index(
        "double apply(double x, double (*g)(double)) { return g(x) * x; }") + 1
    assert f"nothing.cpp:{line}:" in build.stderr and "address taken" in build.stderr


@pytest.mark.parametrize("command", [["c++"], ["cc", "-x", "c++"]], ids=["cxx", "cc-x-cxx"])
def test_any_file_name_compiles_as_cxx(command: list[str], tmp_path: Path):
    # issue 24 item 3: `zymase c++ f.c` and `zymase cc -x c++ f.c` compile C++ in a .c
    # file and link the C++ runtime (std::vector, exceptions)
    source = tmp_path / "vector_in_c_file.c"
    source.write_text((CXX_DIR / "try_catch.cpp").read_text())
    exe = tmp_path / "prog"
    build = run_cli([*command, "-O1", str(source), "-o", str(exe)], timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=RUN_TIMEOUT, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("level", ["-O0", "-O1"])
def test_over_aligned_new_gets_an_aligned_shadow(level: str, tmp_path: Path):
    # issue 24 item 3: the shadow of `new Lane` (alignas(64)) must be as aligned as the
    # primal (calloc gives 16 bytes), since the derivative's accesses keep its alignment
    # (the derivatives are inlined into main at -O1: look at the whole module; at -O2
    # and -O3 the peeled loops' copies fold their compares and LLVM removes the heap
    # objects and their shadows altogether, so there is no allocation left to check)
    ll = emit_llvm(CXX_DIR / "new_delete_variants.cpp", [level], tmp_path, [])
    assert "@aligned_alloc(i64 64," in ll


COMPLEX_INSERT = r"""
#include <complex>
#include <vector>
extern "C" double __enzyme_autodiff(void *, ...);
static double f(double x, int n) {
  std::vector<std::complex<double>> z;
  z.reserve(8);
  for (int i = 0; i < n; i++) z.emplace_back(x * i, x);
  std::complex<double> a = z[1] * z[2];
  z.insert(z.begin() + 1, a);
  double s = 0;
  for (auto &e : z) s += std::norm(e);
  return s;
}
int main(int argc, char **) { return __enzyme_autodiff((void *)f, 1.5, 3 + argc) > 0 ? 0 : 1; }
"""


def test_vector_insert_of_a_complex_variable_is_refused_at_o1(tmp_path: Path):
    # session 31: inserting a variable (not a temporary) into a std::vector<std::complex<double>>
    # in place copies it through libstdc++'s _Temporary_value, whose byte member makes SROA
    # store the real part as an i8 and an i56 at -O1 (a 15-byte copy at -O3): the derivative
    # was silently wrong; now refused, naming the pieces and the workaround
    source = tmp_path / "complex_insert.cpp"
    source.write_text(COMPLEX_INSERT)
    build = run_cli(["c++", "-O1", str(source), "-o", str(tmp_path / "a.out")], timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 1, build.stderr
    errors = [line for line in build.stderr.splitlines() if line.startswith("zymase: error:")]
    assert len(errors) == 1 and "Traceback" not in build.stderr, build.stderr
    assert "stored to memory in pieces" in errors[0] and "v.insert(pos, T(x))" in errors[0], errors[0]


NODE_CONTAINERS = {
    "list": ("#include <list>", "std::list<double> c;", "c.push_back(x[i] * x[i]);", "for (double v : c) s += v;",
             "std::list"),
    "map": ("#include <map>", "std::map<int, double> c;", "c[i % 2] += x[i] * x[i];",
            "for (auto &kv : c) s += kv.second * kv.second;", "std::map"),
}


@pytest.mark.parametrize("level", ["-O0", "-O2"])
@pytest.mark.parametrize("container", sorted(NODE_CONTAINERS))
def test_node_container_refusal_names_the_users_line(tmp_path: Path, container: str, level: str):
    # session 32: std::list and std::map link their nodes in libstdc++'s compiled code, so
    # their use on active data is refused; the message named a line of stl_list.h /
    # stl_tree.h (the code clang inlined, at -O2, or zymase's inliner, at -O0) and told the
    # user to "define the function in the same file". It now names the user's line (line 7,
    # the insertion) and says what to use instead
    include, declare, insert, read, name = NODE_CONTAINERS[container]
    source = tmp_path / f"{container}.cpp"
    source.write_text(f"""{include}
#include <cstdio>
extern int enzyme_dup, enzyme_const;
extern void __enzyme_autodiff(void *, ...);
static double f(double *x, int n) {{
  {declare}
  for (int i = 0; i < n; i++) {insert}
  double s = 0;
  {read}
  return s;
}}
int main(int argc, char **) {{
  double x[3] = {{1, 2, 3}}, d[3] = {{0}};
  __enzyme_autodiff((void *)f, enzyme_dup, x, d, enzyme_const, 2 + argc);
  printf("%g %g %g\\n", d[0], d[1], d[2]);
}}
""")
    build = run_cli(["c++", level, str(source), "-o", str(tmp_path / "a.out")], timeout=COMPILE_TIMEOUT, cwd=tmp_path)
    assert build.returncode == 1, build.stderr
    errors = [line for line in build.stderr.splitlines() if line.startswith("zymase: error:")]
    assert len(errors) == 1 and "Traceback" not in build.stderr, build.stderr
    assert errors[0].startswith(f"zymase: error: {source.name}:7:"), errors[0]
    assert "/include/" not in errors[0] and "define the function in the same file" not in errors[0], errors[0]
    assert f"the nodes of {name}" in errors[0] and "std::vector" in errors[0], errors[0]
