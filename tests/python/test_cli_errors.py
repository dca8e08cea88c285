"""Every user-caused failure ends in one ``zymase: error:`` line naming the construct,
the function and (with -g) the source line, plus a hint; exit code 1; no traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent


def _cli(name: str) -> list[str]:
    exe = BIN / name
    if exe.exists():
        return [str(exe)]
    mod = "zymase.cli"
    fn = "main" if name == "zymase" else "opt_main"
    return [sys.executable, "-c", f"import sys; from {mod} import {fn}; sys.exit({fn}())"]


def run(name: str, args: list[str], stdin: str | None = None, env=None, cwd=None):
    return subprocess.run([*_cli(name), *args], input=stdin, capture_output=True, text=True, env=env, cwd=cwd)


def one_error(proc, *needles: str) -> str:
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    lines = [l for l in err.splitlines() if l.startswith("zymase: error:")]
    assert len(lines) == 1, err
    for n in needles:
        assert n in lines[0], (n, lines[0])
    assert "hint:" in lines[0], lines[0]
    return lines[0]


C_CASES = {
    "too_few.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x, double y) { return x * y; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["too_few.c:3:", "too few arguments for 'f'", "__enzyme_autodiff", "'main'"],
    ),
    "marker_last.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_const;\n"
        "double f(double x, double y) { return x * y; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, enzyme_const) > 0; }\n",
        ["marker_last.c:4:", "enzyme_const is not followed by an argument"],
    ),
    "not_function.c": (
        "extern double __enzyme_autodiff(void*, ...);\ndouble g = 3.0;\n"
        "int main(void) { return __enzyme_autodiff((void*)&g, 1.0) > 0; }\n",
        ["not_function.c:3:", "must be a function", "'@g'"],
    ),
    "too_many.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, 2.0) > 0; }\n",
        ["too_many.c:3:", "too many arguments for 'f'"],
    ),
    "out_on_int.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_out;\n"
        "double f(double x, int n) { return x * n; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0, enzyme_out, 3) > 0; }\n",
        ["out_on_int.c:4:", "enzyme_out on argument 2", "not a float"],
    ),
    "no_rule.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern double mystery(double);\n"
        "double f(double x) { return mystery(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["no_rule.c:3:", "no derivative rule for external function 'mystery'", "function 'f'"],
    ),
    "declared_only.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern double h(double);\n"
        "int main(void) { return __enzyme_autodiff((void*)h, 1.0) > 0; }\n",
        ["declared_only.c:3:", "'h'", "declaration"],
    ),
    "volatile_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(volatile double *x) { return x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 0; __enzyme_autodiff((void*)f, &x, &dx); return dx != 4; }\n",
        ["volatile_active.c:2:", "a volatile memory access on active data", "function 'f'"],
    ),
    "indirect_call.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x, double (*g)(double)) { return g(x) * x; }\n"
        "double sq(double x) { return x * x; }\n"
        "extern int enzyme_const;\nint main(void) { return __enzyme_autodiff((void*)f, 2.0, enzyme_const, sq) > 0; }\n",
        ["indirect_call.c:2:", "indirect call through a function pointer", "function 'f'"],
    ),
    "inline_asm.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { double y; __asm__(\"movsd %1, %0\" : \"=x\"(y) : \"x\"(x)); return y * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) > 0; }\n",
        ["inline_asm.c:2:", "inline assembly is not supported"],
    ),
    "const_pointer_written.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_const;\n"
        "void f(double *x, double *out) { *out = x[0] * x[0]; }\n"
        "int main(void) { double x = 2, dx = 0, o = 0;\n"
        "  __enzyme_autodiff((void*)f, &x, &dx, enzyme_const, &o); return dx != 4; }\n",
        ["const_pointer_written.c:3:", "argument 2 of 'f'", "no shadow", "enzyme_dup"],
    ),
    "opaque_memory.c": (
        "extern double __enzyme_autodiff(void*, ...);\nextern void scale(double *x, int n);\n"
        "double f(double *x) { scale(x, 3); return x[0] * x[1]; }\n"
        "int main(void) { double x[3] = {1, 2, 3}, dx[3] = {0};\n"
        "  __enzyme_autodiff((void*)f, x, dx); return dx[0] != 2; }\n",
        ["opaque_memory.c:3:", "memory holding active data is passed to 'scale'", "function 'f'"],
    ),
    "struct_return.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "typedef struct { double a, b; } pair;\n"
        "__attribute__((noinline)) pair g(double x) { pair p = {x * x, x}; return p; }\n"
        "double f(double x) { pair p = g(x); return p.a + p.b; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["struct_return.c:4:", "aggregates is not supported yet", "function 'f'"],
    ),
    "pointer_result_reverse.c": (
        "extern double *__enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double *f(double *x) { x[0] *= x[0]; return x; }\n"
        "int main(void) { double x = 2, dx = 1; return __enzyme_autodiff((void*)f, enzyme_dup, &x, &dx)[0] != 4; }\n",
        ["pointer_result_reverse.c:4:", "returns a pointer", "reverse mode returns only derivatives"],
    ),
    "variadic_active.c": (
        "#include <stdarg.h>\nextern double __enzyme_autodiff(void*, ...);\n"
        "__attribute__((noinline)) double sum(int n, ...) { va_list ap; va_start(ap, n); double s = 0;\n"
        "  for (int i = 0; i < n; i++) s += va_arg(ap, double); va_end(ap); return s; }\n"
        "double f(double x) { return sum(2, x, x * x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 3.0) > 0; }\n",
        ["variadic_active.c:5:", "variadic function 'sum'", "function 'f'"],
    ),
    "float128_active.c": (
        "extern double __enzyme_autodiff(void*, ...);\n"
        "double f(double x) { __float128 y = x; return (double)(y / (y + 1)); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 3.0) > 0; }\n",
        ["float128_active.c:2:", "converted to f128", "does not differentiate", "function 'f'"],
    ),
    "vector_active.c": (
        "typedef double v2 __attribute__((vector_size(16)));\n"
        "extern void __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "double f(const double *x) { v2 v = *(const v2 *)x; return v[0] * v[1]; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0, 0};\n"
        "  __enzyme_autodiff((void*)f, enzyme_dup, x, dx); return dx[0] != 2; }\n",
        ["vector_active.c:4:", "vector<2xf64> is loaded from memory that holds derivatives", "'llvm.load'",
         "function 'f'"],
    ),
    # issue 23 item 3: malloc through a function pointer in a global the program may change
    "allocator_table.c": (
        "#include <stdlib.h>\nextern double __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"
        "struct allocator { void *(*alloc)(size_t); void (*release)(void *); } A = {malloc, free};\n"
        "double f(const double *x) { double *t = A.alloc(2 * sizeof(double));\n"
        "  t[0] = x[0] * x[0]; t[1] = x[1]; double s = t[0] * t[1]; A.release(t); return s; }\n"
        "int main(void) { double x[2] = {1, 2}, dx[2] = {0, 0};\n"
        "  __enzyme_autodiff((void*)f, enzyme_dup, x, dx); return dx[0] != 4; }\n",
        ["allocator_table.c:5:", "indirect call through a function pointer read from the global 'A'",
         "no shadow", "function 'f'", "static const"],
    ),
    "syntax.c": ("int main(void) { return 0 }\n", ["syntax.c:1:", "expected ';'"]),
}


@pytest.mark.parametrize("name", sorted(C_CASES))
def test_c_errors(tmp_path, name):
    src, needles = C_CASES[name]
    (tmp_path / name).write_text(src)
    proc = run("zymase", ["cc", "-O2", "-g", name, "-o", "exe"], cwd=tmp_path)
    one_error(proc, *needles)
    assert not (tmp_path / "exe").exists()


def test_missing_input(tmp_path):
    one_error(run("zymase", ["cc", "nope.c"], cwd=tmp_path), "no such file")


def test_malformed_llvm_ir(tmp_path):
    (tmp_path / "bad.ll").write_text("define i32 @f( {\n")
    one_error(run("zymase", ["opt", "bad.ll"], cwd=tmp_path), "bad.ll", "malformed LLVM IR")


def test_no_clang(tmp_path):
    (tmp_path / "a.c").write_text("int main(void) { return 0; }\n")
    env = dict(os.environ, PATH=str(tmp_path / "empty"), ZYMASE_CLANG="")
    env.pop("ZYMASE_CLANG")
    proc = subprocess.run(
        [sys.executable, "-c", "import sys\nimport zymase.llvm.toolchain as t\nt._ziglang_available = lambda: False\n"
         "from zymase.cli import main\nsys.exit(main(['cc', 'a.c']))"],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    one_error(proc, "no clang")


@pytest.mark.parametrize(
    "text,needles",
    [
        ("func.func @f( {", ["<stdin>:1:15", "cannot parse MLIR"]),
        (
            'func.func @g(%x: f64) -> f64 {\n  %y = math.sin %x : f64\n  func.return %y : f64\n}\n'
            'func.func @d(%x: f64) -> f64 {\n  %r = enzyme.autodiff @nope(%x, %x) {activity = '
            '[#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} '
            ": (f64, f64) -> f64\n  func.return %r : f64\n}\n",
            ["no function named 'nope'", "enzyme.autodiff @nope", "'d'"],
        ),
        (
            'func.func @g(%x: f64) -> f64 {\n  %y = math.rsqrt %x : f64\n  func.return %y : f64\n}\n'
            'func.func @d(%x: f64) -> f64 {\n  %r = enzyme.autodiff @g(%x, %x) {activity = '
            '[#enzyme<activity enzyme_active>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} '
            ": (f64, f64) -> f64\n  func.return %r : f64\n}\n",
            ["no derivative rule for 'math.rsqrt'", "function 'g'"],
        ),
        (
            'func.func @g(%x: f64) -> f64 {\n  %y = "test.unknown_float"(%x) : (f64) -> f64\n'
            "  func.return %y : f64\n}\n",
            ["cannot parse MLIR"],
        ),
    ],
)
def test_mlir_errors(text, needles):
    one_error(run("zymase-opt", ["-p", "enzyme"], stdin=text), *needles)


def test_unknown_pass():
    one_error(run("zymase-opt", ["-p", "frobnicate"], stdin="builtin.module {}\n"), "unknown pass 'frobnicate'")
