"""``zymase cc`` imports into xDSL only the part of a module that differentiation needs
(zymase/llvm/reachable.py; issue 29 item 2): the functions no derivative reaches keep
their LLVM IR and are linked back after AD. Checked: such a function may hold what the
reader refuses (`asm goto`) and the program still computes the right derivative; a
global that the differentiated code reads and other code writes brings its writer into
the part (otherwise the known-callee resolution would take the global for a constant and
differentiate the wrong function, silently); the split declines modules it does not
reason about."""

from __future__ import annotations

import subprocess

import llvmlite.binding as llvm
import pytest
from forking_cli import run_cli

from zymase.llvm.reachable import differentiated_part

# grad_f (noinline, so that the marker call stays out of main) differentiates f; main's
# `asm goto` is nothing the reader can import: main must pass through untouched.
ASM_IN_MAIN = r"""
#include <stdio.h>
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
static double g(double x) { return sin(x) * x; }
static double (*op)(double) = g;
static double f(double x) { return op(x) * x; }
__attribute__((noinline)) double grad_f(double x) { return __enzyme_autodiff((void *)f, x); }
int main(void) {
    __asm__ goto("" :::: skip);
    double x = 0.7, got = grad_f(x), want = 2 * x * sin(x) + x * x * cos(x);
    printf("%.17g %.17g\n", got, want);
    return fabs(got - want) > 1e-12;
skip:
    return 2;
}
"""

# main points op at h before differentiating f: f's derivative is that of h(x) * x
GLOBAL_WRITTEN_IN_MAIN = r"""
#include <stdio.h>
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
static double g(double x) { return sin(x) * x; }
static double h(double x) { return x * x * x; }
static double (*op)(double) = g;
static double f(double x) { return op(x) * x; }
__attribute__((noinline)) double grad_f(double x) { return __enzyme_autodiff((void *)f, x); }
int main(void) {
    op = h;
    double x = 0.7, got = grad_f(x), want = 4 * x * x * x;
    printf("%.17g %.17g\n", got, want);
    return fabs(got - want) > 1e-12;
}
"""


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_functions_no_derivative_reaches_keep_their_ir(level, tmp_path):
    (tmp_path / "asm_main.c").write_text(ASM_IN_MAIN)
    build = run_cli(["cc", level, "asm_main.c", "-o", "asm_main"], cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "asm_main")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_global_written_outside_the_derivative_brings_its_writer_in(level, tmp_path):
    """Refused (the call through op is indirect once main's store is seen), never the
    derivative of g(x) * x."""
    (tmp_path / "writer.c").write_text(GLOBAL_WRITTEN_IN_MAIN)
    build = run_cli(["cc", level, "writer.c", "-o", "writer"], cwd=tmp_path, timeout=300)
    if build.returncode == 0:
        run = subprocess.run([str(tmp_path / "writer")], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, run.stdout
    else:
        assert build.stderr.startswith("zymase: error: writer.c:8:"), build.stderr
        assert "indirect call through a function pointer" in build.stderr and "'f'" in build.stderr


MODULE = """
@counter = internal global i32 0
@enzyme_const = external global i32

define internal fastcc double @helper(ptr noundef byval({ double, i32 }) align 8 %0, i32 %n) unnamed_addr #0 {
  %x = load double, ptr %0
  ret double %x
}

define internal void @note(i32 %n, ...) #0 {
  ret void
}

define double @f(double %x) #0 {
  %y = fmul double %x, %x
  ret double %y
}

define double @grad(double %x) #0 {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x)
  ret double %d
}

define i32 @main() #0 {
  %s = alloca { double, i32 }
  %r = call fastcc double @helper(ptr byval({ double, i32 }) align 8 %s, i32 1)
  call void (i32, ...) @note(i32 1, double %r)
  store i32 1, ptr @counter
  ret i32 0
}

declare double @__enzyme_autodiff(ptr, ...)

attributes #0 = { nounwind }
"""


def _canonical(text: str) -> str:
    return str(llvm.parse_assembly(text))


def test_split_stubs_unreached_functions_as_valid_declarations():
    part = differentiated_part(_canonical(MODULE))
    assert part is not None
    assert part.functions == {"f", "grad"} and part.stubbed == {"helper", "note", "main"}
    stub = llvm.parse_assembly(part.text)
    stub.verify()
    assert stub.get_function("helper").is_declaration and not stub.get_function("f").is_declaration


@pytest.mark.parametrize("extra", [
    "$c = comdat any\n@g = global i32 0, comdat($c)",
    "@llvm.used = appending global [1 x ptr] [ptr @f], section \"llvm.metadata\"",
    "@__enzyme_register_gradient_f = global [1 x ptr] [ptr @f]",
    "@\"a b\" = global i32 0",
    "module asm \"nop\"",
])
def test_split_declines_what_it_does_not_reason_about(extra):
    assert differentiated_part(_canonical(MODULE + extra + "\n")) is None


def test_split_declines_when_every_function_is_needed():
    # main differentiates f itself: it and everything it calls form the part
    grad = MODULE[MODULE.index("define double @grad"):MODULE.index("define i32 @main")]
    text = MODULE.replace(grad, "").replace(
        "store i32 1, ptr @counter", "%d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double 1.0)\n"
        "  store i32 1, ptr @counter")
    assert differentiated_part(_canonical(text)) is None


def test_split_keeps_the_whole_module_as_a_part_when_it_has_debug_info():
    # every function is needed, but the unchanged ones keep their own IR (and debug info)
    grad = MODULE[MODULE.index("define double @grad"):MODULE.index("define i32 @main")]
    text = MODULE.replace(grad, "").replace(
        "store i32 1, ptr @counter", "%d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double 1.0)\n"
        "  store i32 1, ptr @counter")
    with_debug_info = text.replace("define double @f(double %x) #0 {", "define double @f(double %x) #0 !dbg !7 {") + r"""
!llvm.dbg.cu = !{!0}
!llvm.module.flags = !{!5, !6}
!0 = distinct !DICompileUnit(language: DW_LANG_C11, file: !1, producer: "clang", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!1 = !DIFile(filename: "m.c", directory: "/tmp")
!5 = !{i32 7, !"Dwarf Version", i32 5}
!6 = !{i32 2, !"Debug Info Version", i32 3}
!7 = distinct !DISubprogram(name: "f", scope: !1, file: !1, line: 1, type: !8, scopeLine: 1, spFlags: DISPFlagDefinition, unit: !0)
!8 = !DISubroutineType(types: !9)
!9 = !{}
"""
    assert "!dbg !7" in with_debug_info
    part = differentiated_part(_canonical(with_debug_info))
    assert part is not None and not part.stubbed


# f and the helper it calls are unchanged by AD; main calls the marker (changed)
DEBUG_PROGRAM = r"""
#include <stdio.h>
#include <math.h>
extern double __enzyme_autodiff(void *, ...);
static double sq(double x) { return x * x; }
__attribute__((noinline)) double f(double x) {
    double s = 0;
    for (int i = 0; i < 3; i++) s += sq(x + i) * sin(x);
    return s;
}
int main(void) {
    double x = 0.7, got = __enzyme_autodiff((void *)f, x), want = 0;
    for (int i = 0; i < 3; i++) want += 2 * (x + i) * sin(x) + (x + i) * (x + i) * cos(x);
    printf("%.17g %.17g\n", got, want);
    return fabs(got - want) > 1e-12 * fabs(want);
}
"""


def _function_has_debug_info(ll: str, name: str) -> bool:
    header = next(line for line in ll.splitlines() if line.startswith("define") and f"@{name}(" in line)
    return "!dbg !" in header


@pytest.mark.parametrize("level", ["-O0", "-O2"])
def test_g_keeps_debug_info_of_functions_ad_leaves_unchanged(level, tmp_path):
    # every function is reachable from main: the split used to decline and the whole
    # module went through the reader and writer, which drop debug information, so a
    # `zymase cc -g` program had none at all
    (tmp_path / "dbg.c").write_text(DEBUG_PROGRAM)
    ir = run_cli(["cc", level, "-g", "-S", "-emit-llvm", "dbg.c", "-o", "dbg.ll"], cwd=tmp_path, timeout=300)
    assert ir.returncode == 0, ir.stderr
    ll = (tmp_path / "dbg.ll").read_text()
    assert _function_has_debug_info(ll, "f")
    if level == "-O0":
        assert _function_has_debug_info(ll, "sq")
    build = run_cli(["cc", level, "-g", "dbg.c", "-o", "dbg", "-lm"], cwd=tmp_path, timeout=300)
    assert build.returncode == 0, build.stderr
    run = subprocess.run([str(tmp_path / "dbg")], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout
