"""Tests of zymase.llvm.toolchain: clang discovery, C -> IR, pipelines, JIT, objects, linking."""

from __future__ import annotations

import ctypes
import math
import re
import subprocess
import sys
import textwrap

import pytest

from zymase.errors import CompilerDiagnostics, ZymaseError
from zymase.llvm import clang as clang_driver, jit as jit_module, libllvm, toolchain

C_SOURCE = textwrap.dedent(
    """\
    #include <math.h>

    static double square(double x) {
        double y = x * x;
        return y;
    }

    double horner(double x, int n) {
        double s = 0.0;
        for (int i = 0; i < n; i++)
            s = s * x + sin(x) + square(x);
        return s;
    }

    double hyp(double a, double b) { return sqrt(a * a + b * b); }
    """
)


def reference_horner(x: float, n: int) -> float:
    s = 0.0
    for _ in range(n):
        s = s * x + math.sin(x) + x * x
    return s


@pytest.fixture
def c_file(tmp_path):
    path = tmp_path / "prog.c"
    path.write_text(C_SOURCE)
    return path


@pytest.fixture
def fresh_clang_cache():
    toolchain.find_clang.cache_clear()
    yield
    toolchain.find_clang.cache_clear()


def count_allocas(ll_text: str) -> int:
    return len(re.findall(r"=\s*alloca\b", ll_text))


# ------------------------------------------------------------------------------- clang


def test_find_clang_gives_a_supported_version():
    clang = toolchain.find_clang()
    assert toolchain.MIN_CLANG <= clang.version <= toolchain.MAX_CLANG
    assert clang.argv
    out = subprocess.run([*clang.argv, "--version"], capture_output=True, text=True)
    assert f"clang version {clang.version}." in out.stdout


def test_find_clang_is_cached():
    assert toolchain.find_clang() is toolchain.find_clang()


def test_missing_clang_gives_a_clear_error(monkeypatch, fresh_clang_cache):
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("ZYMASE_CLANG", raising=False)
    monkeypatch.setattr(clang_driver, "_ziglang_available", lambda: False)
    with pytest.raises(ZymaseError) as info:
        toolchain.find_clang()
    err = info.value
    assert "no clang between 14 and 22 found" in err.message
    assert "apt-get install -y clang-19" in err.hint
    assert "pip install ziglang" in err.hint
    assert err.format().startswith("zymase: error: no clang between 14 and 22 found")


def test_ziglang_fallback_or_clear_error_without_path(monkeypatch, fresh_clang_cache):
    """With nothing on PATH, the ziglang package is used when it is installed."""
    monkeypatch.setenv("PATH", "")
    monkeypatch.delenv("ZYMASE_CLANG", raising=False)
    if clang_driver._ziglang_available():
        clang = toolchain.find_clang()
        assert "ziglang" in clang.argv and "-fno-sanitize=undefined" in clang.argv
        assert "-target" in clang.argv
    else:
        with pytest.raises(ZymaseError, match="no clang between 14 and 22"):
            toolchain.find_clang()


def test_too_new_clang_on_path_is_refused(monkeypatch, tmp_path, fresh_clang_cache):
    fake = tmp_path / "clang"
    fake.write_text("#!/bin/sh\necho 'clang version 23.0.0'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("ZYMASE_CLANG", raising=False)
    monkeypatch.setattr(clang_driver, "_ziglang_available", lambda: False)
    with pytest.raises(ZymaseError, match="no clang between 14 and 22"):
        toolchain.find_clang()


def test_zymase_clang_override(monkeypatch, fresh_clang_cache):
    real = toolchain.find_clang()
    toolchain.find_clang.cache_clear()
    if not real.is_zig:  # a clang binary to point ZYMASE_CLANG at
        monkeypatch.setenv("ZYMASE_CLANG", real.argv[0])
        assert toolchain.find_clang().argv == [real.argv[0]]
        toolchain.find_clang.cache_clear()
    monkeypatch.setenv("ZYMASE_CLANG", "/nonexistent/clang")
    with pytest.raises(ZymaseError, match="ZYMASE_CLANG"):
        toolchain.find_clang()


# ------------------------------------------------------------------------------- C -> IR


@pytest.mark.parametrize("level", [0, 1, 2, 3])
def test_c_to_llvm_ir_at_every_level(c_file, level):
    ir = toolchain.c_to_llvm_ir(c_file, [], level)
    assert "define dso_local double @horner" in ir or "define double @horner" in ir
    assert "optnone" not in ir
    # The front end only: no LLVM pass ran, so locals are still in memory.
    assert count_allocas(ir) > 0


def test_c_to_llvm_ir_passes_user_flags(tmp_path):
    src = tmp_path / "flags.c"
    src.write_text("double f(double x) { return SCALE * x; }\n")
    ir = toolchain.c_to_llvm_ir(src, ["-DSCALE=3.5", "-ffast-math"], 2)
    assert "3.5" in ir or "3.500000e+00" in ir
    assert "fast" in ir
    ir_g = toolchain.c_to_llvm_ir(src, ["-DSCALE=2", "-g"], 1)
    assert "!dbg" in ir_g


def test_unknown_target_features_are_dropped(capfd):
    ir = textwrap.dedent(
        """\
        define double @f(double %x) #0 {
          %y = fmul double %x, %x
          ret double %y
        }
        attributes #0 = { "target-cpu"="x86-64" "target-features"="+sse2,+zymase-no-such-feature,+cx8" }
        """
    )
    kept = toolchain.drop_unknown_target_features(ir)
    assert '"target-features"="+sse2,+cx8"' in kept
    capfd.readouterr()
    toolchain.optimize(kept, 2)
    assert "not a recognized feature" not in capfd.readouterr().err


def test_march_native_compiles_quietly(tmp_path, capfd):
    # clang 19's -march=native names features that LLVM 22 renamed; LLVM would warn about
    # each of them for every function, in every pass
    src = tmp_path / "native.c"
    src.write_text(C_SOURCE)
    ir = toolchain.c_to_llvm_ir(src, ["-march=native"], 2)
    toolchain.emit_object(toolchain.optimize(toolchain.preopt(ir, 2), 2), tmp_path / "native.o")
    assert "not a recognized feature" not in capfd.readouterr().err


def test_c_syntax_error_names_file_and_line(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text("double f(double x) {\n    return x * x\n}\n")
    with pytest.raises(ZymaseError) as info:
        toolchain.c_to_llvm_ir(src, [], 2)
    err = info.value
    assert re.search(r"broken\.c:2:\d+: error: expected ';'", err.message), err.message
    # shown as clang shows it, source line and caret included (issue 23 item 4)
    assert isinstance(err, CompilerDiagnostics)
    assert re.search(r"broken\.c:2:\d+: error: expected ';'", err.format())
    assert "    2 |     return x * x" in err.format() and "^" in err.format()
    assert "zymase: error" not in err.format()


def test_missing_c_file(tmp_path):
    with pytest.raises(ZymaseError, match="no such C file"):
        toolchain.c_to_llvm_ir(tmp_path / "absent.c", [], 2)


def test_bad_level_is_a_user_error(c_file):
    with pytest.raises(ZymaseError, match="optimization level"):
        toolchain.c_to_llvm_ir(c_file, [], 4)
    with pytest.raises(ZymaseError, match="optimization level"):
        toolchain.preopt("", -1)


# ------------------------------------------------------------------------------- pipelines


@pytest.mark.parametrize("level", [0, 2])
def test_preopt_promotes_allocas(c_file, level):
    ir = toolchain.c_to_llvm_ir(c_file, [], level)
    assert count_allocas(ir) > 0
    out = toolchain.preopt(ir, level)
    assert count_allocas(out) == 0
    assert "@horner" in out and "@hyp" in out


def test_preopt_level0_only_promotes(c_file):
    out = toolchain.preopt(toolchain.c_to_llvm_ir(c_file, [], 0), 0)
    # No inlining at level 0: the static helper is still called.
    assert re.search(r"call double @square", out)


def test_preopt_does_not_vectorize_or_unroll(tmp_path):
    src = tmp_path / "loop.c"
    src.write_text(
        "void axpy(int n, double a, double *restrict x, double *restrict y) {\n"
        "  for (int i = 0; i < n; i++) y[i] += a * x[i];\n}\n"
        "double fixed(double x) { double s = 0; for (int i = 0; i < 4; i++) s = s * x + i; "
        "return s; }\n"
    )
    ir = toolchain.c_to_llvm_ir(src, [], 3)
    pre = toolchain.preopt(ir, 3)
    assert "<2 x double>" not in pre and "<4 x double>" not in pre
    post = toolchain.optimize(pre, 3)
    assert "x double>" in post  # the full pipeline vectorizes axpy


def test_optimize_level0_is_identity(c_file):
    ir = toolchain.c_to_llvm_ir(c_file, [], 0)
    assert toolchain.optimize(ir, 0) == ir


def test_optimize_returns_verified_ir(c_file):
    pre = toolchain.preopt(toolchain.c_to_llvm_ir(c_file, [], 2), 2)
    out = toolchain.optimize(pre, 2)
    assert "define" in out and "@horner" in out
    toolchain.preopt(out, 1)  # parses and verifies again


def test_ir_without_triple_gets_the_host_one():
    ir = "define double @twice(double %x) {\n  %y = fadd double %x, %x\n  ret double %y\n}\n"
    out = toolchain.optimize(ir, 2)
    assert "target triple" in out
    assert jit_module.jit(out).function("twice", ctypes.c_double, ctypes.c_double)(2.5) == 5.0


def test_invalid_ir_is_a_user_error():
    with pytest.raises(ZymaseError, match="invalid LLVM IR"):
        toolchain.preopt("define double @f( {", 2)


# ------------------------------------------------------------------------------- JIT


@pytest.mark.parametrize("level", [0, 2])
def test_jit_and_call(c_file, level):
    ir = toolchain.optimize(toolchain.preopt(toolchain.c_to_llvm_ir(c_file, [], level), level), level)
    module = jit_module.jit(ir)
    horner = module.function("horner", ctypes.c_double, ctypes.c_double, ctypes.c_int)
    for x, n in [(0.5, 3), (-1.25, 7), (2.0, 0)]:
        assert horner(x, n) == pytest.approx(reference_horner(x, n), rel=1e-14)
    assert module.address("hyp") != 0
    # libm resolves (sqrt may be an instruction, sin must be a call into libm)
    hyp = module.function("hyp", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    assert hyp(3.0, 4.0) == 5.0


def test_jit_function_keeps_module_alive(c_file):
    ir = toolchain.preopt(toolchain.c_to_llvm_ir(c_file, [], 2), 2)
    fn = jit_module.jit(ir).function("hyp", ctypes.c_double, ctypes.c_double, ctypes.c_double)
    import gc

    gc.collect()
    assert fn(6.0, 8.0) == 10.0


def test_jit_takes_the_optimized_module_once(monkeypatch):
    """optimize(for_jit=True) hands jit the module it printed (no second parse); a text
    made from it, or a second jit of it, is parsed (the first engine owns the module).
    (llvmlite's pipeline: the release library's module cannot go to llvmlite's JIT.)"""
    monkeypatch.setattr(libllvm, "available", lambda: False)
    ir = "define double @twice(double %x) {\n  %y = fadd double %x, %x\n  ret double %y\n}\n"
    out = toolchain.optimize(ir, 2, for_jit=True)
    assert out == toolchain.optimize(ir, 2)  # the same text
    parses = []
    parse = toolchain._parse
    monkeypatch.setattr(toolchain, "_parse", lambda text: (parses.append(text), parse(text))[1])
    first = jit_module.jit(out).function("twice", ctypes.c_double, ctypes.c_double)
    assert parses == []
    second = jit_module.jit(out).function("twice", ctypes.c_double, ctypes.c_double)
    renamed = jit_module.jit(out.replace("@twice", "@double_it")).function("double_it", ctypes.c_double,
                                                                          ctypes.c_double)
    assert len(parses) == 2
    assert (first(2.5), second(1.5), renamed(-3.0)) == (5.0, 3.0, -6.0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sonames are glibc's")
def test_jit_loads_libm_without_a_child_process(monkeypatch):
    """The JIT's libm and libgcc_s are loaded by their sonames on Linux: find_library ran
    ``ldconfig -p`` in a child process for each, about 12 ms of a first zymase.grad
    call (issue 29). A soname that does not load falls back to find_library's name. The
    kernel below calls __powidf2 (libgcc_s) and pow (libm)."""
    def no_child(lib):
        raise AssertionError(f"find_library({lib!r}) started a child process")

    monkeypatch.setattr(jit_module.ctypes.util, "find_library", no_child)
    jit_module._load_libm.cache_clear()
    ir = textwrap.dedent("""\
        declare double @llvm.powi.f64.i32(double, i32)
        declare double @pow(double, double)
        define double @f(double %x, i32 %n) {
          %p = call double @llvm.powi.f64.i32(double %x, i32 %n)
          %q = call double @pow(double %x, double 0.5)
          %r = fadd double %p, %q
          ret double %r
        }
        """)
    f = jit_module.jit(ir, opt=0).function("f", ctypes.c_double, ctypes.c_double, ctypes.c_int)
    assert f(4.0, 3) == 66.0
    asked = []
    monkeypatch.setattr(jit_module.ctypes.util, "find_library", lambda lib: asked.append(lib) or "libm.so.6")
    monkeypatch.setitem(jit_module._GLIBC_SONAMES, "m", "libzymase-no-such-library.so.9")
    assert jit_module._load_library("m") and asked == ["m"]


def test_jit_unknown_name(c_file):
    module = jit_module.jit(toolchain.preopt(toolchain.c_to_llvm_ir(c_file, [], 1), 1))
    with pytest.raises(ZymaseError, match="no function or global named 'nope'"):
        module.address("nope")


# ------------------------------------------------------------------------------- objects


MAIN_SOURCE = textwrap.dedent(
    """\
    #include <math.h>
    #include <stdio.h>
    #include <stdlib.h>

    double f(double x) { return exp(x) * cos(x); }

    int main(int argc, char **argv) {
        double x = argc > 1 ? atof(argv[1]) : 0.5;
        printf("%.6f\\n", f(x));
        return f(x) > 0 ? 0 : 3;
    }
    """
)


@pytest.mark.parametrize("level", [0, 2])
def test_emit_link_and_run(tmp_path, level):
    src = tmp_path / "main.c"
    src.write_text(MAIN_SOURCE)
    ir = toolchain.optimize(toolchain.preopt(toolchain.c_to_llvm_ir(src, [], level), level), level)
    obj = tmp_path / "main.o"
    exe = tmp_path / "main"
    toolchain.emit_object(ir, obj)
    assert obj.stat().st_size > 0
    toolchain.link([obj], exe, [])
    run = subprocess.run([str(exe), "0.5"], capture_output=True, text=True)
    assert run.returncode == 0
    assert float(run.stdout) == pytest.approx(math.exp(0.5) * math.cos(0.5), abs=1e-6)
    assert subprocess.run([str(exe), "2.0"]).returncode == 3


def test_link_error_names_the_missing_symbol(tmp_path):
    src = tmp_path / "undef.c"
    src.write_text(
        "extern double __enzyme_autodiff(void *, ...);\n"
        "double sq(double x) { return x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void *)sq, 3.0) != 6.0; }\n"
    )
    obj = tmp_path / "undef.o"
    toolchain.emit_object(toolchain.preopt(toolchain.c_to_llvm_ir(src, [], 2), 2), obj)
    with pytest.raises(ZymaseError) as info:
        toolchain.link([obj], tmp_path / "undef", [])
    assert "__enzyme_autodiff" in info.value.message
    assert "__enzyme_" in info.value.hint


def test_link_passes_user_flags(tmp_path):
    src = tmp_path / "m.c"
    src.write_text("int main(void) { return 0; }\n")
    obj = tmp_path / "m.o"
    toolchain.emit_object(toolchain.preopt(toolchain.c_to_llvm_ir(src, [], 0), 0), obj)
    with pytest.raises(ZymaseError, match="linking failed"):
        toolchain.link([obj], tmp_path / "m", ["-lzymase_no_such_library"])
    toolchain.link([obj], tmp_path / "m", ["-L", str(tmp_path)])
    assert subprocess.run([str(tmp_path / "m")]).returncode == 0


def test_emit_object_takes_the_printed_module_once(monkeypatch, tmp_path):
    """An OptimizedIR (what clang_primal.take_clang_functions returns) gives emit_object
    its module instead of a second parse, and the object is the one the text makes.
    (llvmlite's code generation: the release library parses the text itself.)"""
    monkeypatch.setattr(libllvm, "available", lambda: False)
    ir = "define double @twice(double %x) {\n  %y = fadd double %x, %x\n  ret double %y\n}\n"
    from_text = tmp_path / "text.o"
    toolchain.emit_object(ir, from_text)
    module = toolchain.parse_module(ir)
    out = toolchain.OptimizedIR(toolchain.print_module(module), module)
    parses = []
    parse = toolchain._parse
    monkeypatch.setattr(toolchain, "_parse", lambda text: (parses.append(text), parse(text))[1])
    toolchain.emit_object(out, tmp_path / "module.o")
    assert parses == []
    toolchain.emit_object(out, tmp_path / "again.o")  # the module went to the first one
    assert len(parses) == 1
    assert (tmp_path / "module.o").read_bytes() == (tmp_path / "again.o").read_bytes() == from_text.read_bytes()


def test_packaged_clang_version_read_from_its_path(monkeypatch, tmp_path):
    """A clang installed as Debian's packages install it (``/usr/lib/llvm-N/bin/clang``)
    has its major version in its path: no ``clang --version`` run (10-20 ms of CPU a
    build); any other clang is asked."""
    runs = []
    real_run = clang_driver.subprocess.run
    monkeypatch.setattr(clang_driver.subprocess, "run", lambda argv, **kw: (runs.append(argv), real_run(argv, **kw))[1])
    packaged = tmp_path / "usr" / "lib" / "llvm-17" / "bin" / "clang"
    packaged.parent.mkdir(parents=True)
    packaged.write_text("#!/bin/sh\necho 'clang version 99.0.0'\n")
    packaged.chmod(0o755)
    link = tmp_path / "clang-17"
    link.symlink_to(packaged)
    assert clang_driver._clang_version([str(link)]) == 17 and runs == []
    elsewhere = tmp_path / "bin" / "clang"
    elsewhere.parent.mkdir()
    elsewhere.write_text(packaged.read_text())
    elsewhere.chmod(0o755)
    assert clang_driver._clang_version([str(elsewhere)]) == 99 and len(runs) == 1
