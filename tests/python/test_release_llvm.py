"""LLVM's release library (llvm/libllvm.py) gives what llvmlite's LLVM gives: the same
pipelines make the same IR and the same object code, at every level, for ``zymase cc`` and
for the JIT's host-specific pipeline; switched off, every step is llvmlite's (issue 29:
llvmlite's LLVM carries assertions and runs the same passes 1.5-2x slower).

CI installs the library (Debian's libllvm22) and sets ZYMASE_REQUIRE_LIBLLVM=1, so that
these tests run there; elsewhere they run where the library is found.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from zymase.llvm import jit as jit_module, libllvm, toolchain

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "src" / "zymase" / "bench" / "workloads"

needs_library = pytest.mark.skipif(
    not libllvm.available() and os.environ.get("ZYMASE_REQUIRE_LIBLLVM") != "1",
    reason="no release libLLVM of llvmlite's major version here (apt-get install libllvm22)")


def test_the_library_is_there_when_required():
    if os.environ.get("ZYMASE_REQUIRE_LIBLLVM") == "1":
        assert libllvm.available(), "ZYMASE_REQUIRE_LIBLLVM=1 but no release libLLVM was loaded"


def _same_ir(a: str, b: str) -> bool:
    """Equal up to what each LLVM context numbers on its own (struct type suffixes,
    attribute groups, the module's name)."""
    def canonical(text: str) -> list[str]:
        text = re.sub(r"%(struct\.[\w.]+?)\.\d+\b", r"%\1", text)
        text = re.sub(r"#\d+\b", "#N", text)
        return [line for line in text.splitlines()
                if not line.startswith(("; ModuleID", "source_filename", "attributes #"))]
    return canonical(a) == canonical(b)


LOOPS = """
void axpy(double *restrict y, const double *restrict x, double a, int n) {
  for (int i = 0; i < n; i++) y[i] += a * x[i];
}
void pair(double *restrict y, const double *restrict x) {
  y[0] = x[0] * 2.0 + x[1];
  y[1] = x[1] * 2.0 + x[0];
}
double stencil(const double *u, int n) {
  double s = 0;
  for (int i = 1; i < n - 1; i++) s += u[i - 1] - 2 * u[i] + u[i + 1];
  return s;
}
"""


@needs_library
@pytest.mark.parametrize("level", [1, 2, 3])
def test_pipelines_match_llvmlite(tmp_path, monkeypatch, level):
    src = tmp_path / "loops.c"
    src.write_text(LOOPS)
    ir = toolchain.c_to_llvm_ir(src, [], level)
    released = (toolchain.preopt(ir, level), toolchain.optimize(ir, level),
                toolchain.optimize(ir, level, host=True))
    assert "<2 x double>" in released[1] or level < 2  # the vectorizers ran
    with monkeypatch.context() as m:
        m.setattr(libllvm, "available", lambda: False)
        lite = (toolchain.preopt(ir, level), toolchain.optimize(ir, level),
                toolchain.optimize(ir, level, host=True))
    for a, b, step in zip(released, lite, ("preopt", "optimize", "optimize for the host")):
        assert _same_ir(a, b), f"{step} at -O{level} differs between the release library and llvmlite"
    # the object code too, and the options set for one pipeline do not leak into the next
    objects = []
    for available in (True, False):
        with monkeypatch.context() as m:
            if not available:
                m.setattr(libllvm, "available", lambda: False)
            out = tmp_path / f"{available}.o"
            toolchain.emit_object(released[1], out, opt=level)
            objects.append(out.read_bytes())
    assert objects[0] == objects[1]


@needs_library
@pytest.mark.parametrize("workload,level", [("hand", 1), ("hand", 2), ("gmm", 3)])
def test_zymase_cc_objects_match_llvmlite(tmp_path, workload, level):
    """A whole `zymase cc -c` (the pre-AD pipeline, AD, the post-AD pipeline, clang's
    primal, code generation) makes the same object file either way."""
    objects = []
    for backend in ("", "llvmlite"):
        out = tmp_path / f"{workload}-{backend or 'release'}.o"
        env = {**os.environ, "ZYMASE_LLVM": backend}
        subprocess.run([sys.executable, "-m", "zymase.cli", "cc", f"-O{level}", "-c", str(WORKLOADS / f"{workload}.c"),
                        "-o", str(out), "--no-cache"], env=env, check=True, capture_output=True)
        objects.append(out.read_bytes())
    assert objects[0] == objects[1]


def test_switched_off_by_the_environment():
    code = "from zymase.llvm import libllvm; print(libllvm.available())"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "ZYMASE_LLVM": "llvmlite"},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


JIT_IR = """\
declare double @llvm.powi.f64.i32(double, i32)
declare double @pow(double, double)
@scale = global double 3.0
define double @f(double %x, i32 %n) {
  %a = call double @llvm.powi.f64.i32(double %x, i32 %n)
  %b = call double @pow(double %x, double 0.5)
  %c = load double, ptr @scale
  %d = fadd double %a, %b
  %e = fmul double %d, %c
  ret double %e
}
"""


@needs_library
def test_jit_runs_the_release_librarys_machine_code(monkeypatch):
    """The JIT loads the release library's object code (libgcc's __powidf2, libm's pow, a
    global) and computes what llvmlite's code generation computes; a module with static
    constructors is compiled by llvmlite (they run from the module's IR)."""
    import ctypes

    released = jit_module.jit(toolchain.optimize(JIT_IR, 2, for_jit=True, host=True), opt=3)
    assert released._object is not None
    with monkeypatch.context() as m:
        m.setattr(libllvm, "available", lambda: False)
        lite = jit_module.jit(toolchain.optimize(JIT_IR, 2, for_jit=True, host=True), opt=3)
    assert lite._object is None
    sig = (ctypes.c_double, ctypes.c_double, ctypes.c_int)
    for x, n in [(2.0, 3), (0.25, -2), (7.5, 0)]:
        want = (x ** n + x ** 0.5) * 3.0
        assert released.function("f", *sig)(x, n) == lite.function("f", *sig)(x, n) == pytest.approx(want, rel=1e-15)
    ctor_ir = JIT_IR + """\
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @init, ptr null }]
define internal void @init() {
  store double 5.0, ptr @scale
  ret void
}
"""
    with_ctor = jit_module.jit(ctor_ir, opt=2)
    assert with_ctor._object is None
    assert with_ctor.function("f", *sig)(2.0, 1) == pytest.approx((2.0 + 2.0 ** 0.5) * 5.0)


@needs_library
def test_threads_get_what_one_thread_gets(tmp_path):
    """Pipelines and code generation called from several threads at once (a user's threads
    each taking a first zymase.grad call): each call has its own context and target
    machine, and the process-wide LLVM options of one pipeline do not leak into another."""
    from concurrent.futures import ThreadPoolExecutor

    src = tmp_path / "loops.c"
    src.write_text(LOOPS)
    ir = toolchain.c_to_llvm_ir(src, [], 2)
    steps = [lambda: toolchain.preopt(ir, 2), lambda: toolchain.optimize(ir, 2),
             lambda: toolchain.optimize(ir, 3, host=True)] * 4
    alone = [step() for step in steps]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda step: step(), steps))
    assert all(_same_ir(a, b) for a, b in zip(alone, together))
    objects = list(ThreadPoolExecutor(4).map(lambda _: toolchain.release_object(alone[1], 2), range(8)))
    assert len(set(objects)) == 1


GRADIENT_C = r"""
#include <math.h>
double __enzyme_autodiff(void *, ...);
static double energy(const double *x, int n) {
  double s = 0;
  for (int i = 0; i < n; i++) s += sin(x[i]) * x[i];
  return s;
}
void grad(const double *x, double *dx, int n) { __enzyme_autodiff((void *)energy, x, dx, n); }
double run(const double *x, int n) { return energy(x, n); }
"""


@needs_library
def test_zymase_cc_never_loads_llvmlites_llvm(tmp_path):
    """With the release library, a build (the pre-AD pipeline, the reader's check, the
    split and merge, clang's primal linked in, the post-AD pipeline, code generation) does
    every LLVM step there: llvmlite's own LLVM (0.07 s to load) is never loaded."""
    source = tmp_path / "g.c"
    source.write_text(GRADIENT_C)
    # (a thread left running keeps the command from ending the process itself: cli._end_process)
    code = ("import sys, threading\nfrom zymase.cli import main\n"
            "running = threading.Event()\nthreading.Thread(target=running.wait).start()\n"
            f"sys.argv = ['zymase', 'cc', '-O2', '-c', {str(source)!r}, '-o', {str(tmp_path / 'g.o')!r}, '--no-cache']\n"
            "try:\n    code = main()\nfinally:\n    running.set()\nassert not code, code\n"
            "print('llvmlite.binding' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False"
    assert (tmp_path / "g.o").stat().st_size > 0


@needs_library
def test_inline_assembly_that_does_not_assemble_is_a_zymase_error(tmp_path):
    """LLVM reports an error of code generation to a handler of the context; without one
    it prints it and exits the process."""
    source = tmp_path / "asm.c"
    source.write_text('double f(double x) { __asm__("bogus_mnemonic %0" : "+x"(x)); return x * x; }\n')
    proc = subprocess.run([sys.executable, "-m", "zymase.cli", "cc", "-O2", "-c", str(source), "-o",
                           str(tmp_path / "asm.o"), "--no-cache"], capture_output=True, text=True)
    assert proc.returncode == 1
    assert proc.stderr.startswith("zymase: error: inline assembly does not assemble:"), proc.stderr
    assert "bogus_mnemonic" in proc.stderr and "internal error" not in proc.stderr
    assert "in function 'f'" in proc.stderr, proc.stderr


LINK_A = """\
@shared = linkonce_odr global i32 1
define internal double @helper(double %x) {
  %y = fmul double %x, %x
  ret double %y
}
define double @f(double %x) {
  %y = call double @helper(double %x)
  %z = call double @g(double %y)
  ret double %z
}
declare double @g(double)
"""
LINK_B = """\
@shared = linkonce_odr global i32 1
define internal double @helper(double %x) {
  %y = fadd double %x, %x
  ret double %y
}
define double @g(double %x) {
  %y = call double @helper(double %x)
  ret double %y
}
define double @f(double %x) {
  ret double %x
}
"""


@needs_library
def test_linking_matches_llvmlite(monkeypatch):
    """llvm/modules links, renames the colliding local, keeps the first definition with
    ``same_definitions``, removes dead code and prints as llvmlite's LLVM does."""
    from zymase.autodiff.rules import blas

    runtime_user = ("declare void @" + blas.RUNTIME_PREFIX + "nothing_uses_it()\n"
                    "define internal void @kept() {\n  ret void\n}\n" + LINK_A.replace("declare double @g", "define double @g")
                    .replace("double @g(double)", "double @g(double %x) {\n  ret double %x\n}"))
    results = []
    for release in (True, False):
        monkeypatch.setattr(libllvm, "available", lambda release=release: release)
        linked = toolchain.link_modules(LINK_A, LINK_B, same_definitions=True)
        with_runtime = toolchain.link_c_runtime(runtime_user, blas.RUNTIME_SOURCE, blas.RUNTIME_PREFIX)
        results.append((linked, with_runtime))
    assert _same_ir(results[0][0], results[1][0]) and _same_ir(results[0][1], results[1][1])
    linked = results[0][0]
    assert re.search(r"@helper\.\d+\(", linked) and "define double @g" in linked and "fmul" in linked
    assert "@kept()" in results[0][1] and blas.RUNTIME_PREFIX + "nothing_uses_it" not in results[0][1]
