"""What stays refused of Enzyme's activity annotations (issue 24 item 2, second half):
inactive globals used through their address, malformed __enzyme_allocation_like,
attributes and spellings zymase does not read, function_like naming no libm rule or a
function of another shape, an inactive function that may write memory holding
derivatives. Each gives one ``zymase: error:`` line naming the construct. Also:
Enzyme's IR function attributes in hand-written IR (``zymase opt``) are read."""

from __future__ import annotations

import ctypes

import pytest
from test_cli_errors import one_error, run

DECLS = "extern double __enzyme_autodiff(void*, ...);\nextern int enzyme_dup;\n"

CASES = {
    "function_like_unknown.c": (
        [],
        DECLS + "__attribute__((enzyme_function_like(\"nosuchfn\"))) double g(double x) { return x; }\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["function_like_unknown.c:3", "enzyme_function_like(\"nosuchfn\") on 'g'",
         "no derivative rule for a libm function named 'nosuchfn'"],
    ),
    "function_like_arity.c": (
        [],
        DECLS + "double g(double x, double y) { return x * y; }\n"
        "void *__enzyme_function_like[2] = {(void*)g, \"log\"};\n"
        "double f(double x) { return g(x, x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["'__enzyme_function_like'", "it takes 2 parameters and log takes 1"],
    ),
    "inactive_writes_shadow.c": (  # its store would leave a stale derivative behind
        [],
        DECLS + "__attribute__((enzyme_inactive)) void reset(double *v) { v[0] = 1.0; }\n"
        "double f(double *v) { double a = v[0] * v[0]; reset(v); return a * v[0]; }\n"
        "int main(void) { double v = 2, dv = 0; __enzyme_autodiff((void*)f, enzyme_dup, &v, &dv); return 0; }\n",
        ["inactive_writes_shadow.c:4:", "'reset', which is marked inactive and may write to it", "function 'f'"],
    ),
    "inactive_global_array.c": (  # an element's store could be forwarded to its load before AD
        [],
        DECLS + "__attribute__((enzyme_inactive)) double table[4];\n"
        "double f(double x) { for (int i = 0; i < 4; i++) table[i] = x * i; return table[2] * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["inactive_global_array.c:4:", "inactive global 'table' is used through its address", "function 'f'"],
    ),
    "inactive_global_pointer.c": (
        [],
        DECLS + "double scale = 2.0;\nvoid *__enzyme_inactive_global = (void*)&scale;\n"
        "static void set(double *p, double v) { *p = v; }\n"
        "double f(double x) { set(&scale, x); return scale * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["inactive_global_pointer.c:", "inactive global 'scale' is used through its address"],
    ),
    "allocation_like_size_index.c": (
        [],
        "#include <stdlib.h>\n" + DECLS + "void *my_alloc(size_t n) { return malloc(n); }\n"
        "void my_free(void *p) { free(p); }\n"
        "void *__enzyme_allocation_like[4] = {(void*)my_alloc, (void*)3, (void*)\"-1\", (void*)my_free};\n"
        "double f(double x) { double *t = my_alloc(8); *t = x * x; double r = *t; my_free(t); return r; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["'__enzyme_allocation_like' registers 'my_alloc' as an allocator", "integer parameter"],
    ),
    "allocation_like_free_args.c": (
        [],
        "#include <stdlib.h>\n" + DECLS + "void *my_alloc(size_t n) { return malloc(n); }\n"
        "void my_free(void *p) { free(p); }\n"
        "void *__enzyme_allocation_like[4] = {(void*)my_alloc, (void*)0, (void*)\"0\", (void*)my_free};\n"
        "double f(double x) { double *t = my_alloc(8); *t = x * x; double r = *t; my_free(t); return r; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["'__enzyme_allocation_like' must name its deallocator", "(-1)"],
    ),
    "nofree_attribute.c": (  # with an implemented one, so that the header is included too
        [],
        DECLS + "__attribute__((enzyme_inactive)) double g(double x) { return x; }\n"
        "__attribute__((enzyme_nofree)) double h(double x) { return x; }\n"
        "double f(double x) { return g(x) * h(x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["nofree_attribute.c:4:16", "attribute 'enzyme_nofree' is not implemented"],
    ),
    "c23_spelling.c": (
        ["-std=c2x"],
        DECLS + "[[enzyme_inactive]] double g(double x) { return x; }\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["c23_spelling.c:3:3", "'[[enzyme_inactive]]' is not implemented", "GNU spelling"],
    ),
    "namespaced_spelling.cpp": (  # clang's warning names only 'inactive'
        [],
        "extern \"C\" double __enzyme_autodiff(void*, ...);\n"
        "[[enzyme::inactive]] double g(double x) { return x; }\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["namespaced_spelling.cpp:2:3", "'[[enzyme::inactive]]' is not implemented"],
    ),
    "always_inline.c": (  # noinline would contradict it (LLVM rejects the module)
        [],
        DECLS + "static inline __attribute__((always_inline, enzyme_inactive)) double g(double x) { return 2 * x; }\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["always_inline.c:3", "'g' is marked inactive, function_like or with a registered derivative, and also always_inline",
         "remove always_inline"],
    ),
    "name_clash.c": (
        [],
        DECLS + "__attribute__((enzyme_inactive)) double g(double x) { return x; }\n"
        "double f(double x) { double enzyme_inactive = g(x); return enzyme_inactive * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["name_clash.c:4:", "'enzyme_inactive' is used as a name", "rename"],
    ),
    "inactive_and_like.c": (
        [],
        DECLS + "__attribute__((enzyme_inactive)) double g(double x) { return x; }\n"
        "void *__enzyme_function_like[2] = {(void*)g, \"log\"};\n"
        "double f(double x) { return g(x) * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n",
        ["'g' is marked both inactive and function_like(\"log\")"],
    ),
}


@pytest.mark.parametrize("level", ["-O0", "-O2"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_refused_activity_annotation(tmp_path, name, level):
    flags, src, needles = CASES[name]
    (tmp_path / name).write_text(src)
    proc = run("zymase", ["cc", level, *flags, name, "-o", "exe"], cwd=tmp_path)
    one_error(proc, *needles)
    assert not (tmp_path / "exe").exists()


# Enzyme's other source attributes (its clang plugin accepts them): refused by name,
# also next to an implemented one (then the attribute header is included)
UNIMPLEMENTED_ATTRIBUTES = ["enzyme_nofree", "enzyme_shouldrecompute", "enzyme_sparse_accumulate",
                            "enzyme_elementwise_read", "enzyme_notypeanalysis"]


@pytest.mark.parametrize("with_implemented", [False, True], ids=["alone", "with_inactive"])
@pytest.mark.parametrize("name", UNIMPLEMENTED_ATTRIBUTES)
def test_unimplemented_attribute_is_refused(tmp_path, name, with_implemented):
    other = "__attribute__((enzyme_inactive)) " if with_implemented else ""
    (tmp_path / "a.c").write_text(
        DECLS + f"{other}double g(double x) {{ return x; }}\n"
        f"__attribute__(({name})) double h(double x) {{ return x * x; }}\n"
        "double f(double x) { return g(x) * h(x); }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 1.0) > 0; }\n")
    proc = run("zymase", ["cc", "-O0", "a.c", "-o", "exe"], cwd=tmp_path)
    one_error(proc, f"a.c:4:16: attribute '{name}' is not implemented")
    assert not (tmp_path / "exe").exists()


def test_attributes_with_werror(tmp_path):
    # -Werror makes clang's "unknown attribute ignored" an error: the implemented ones are
    # still read, the others still refused by name
    src = DECLS + "__attribute__((enzyme_inactive)) double g(double x) { return 2 * x; }\n" \
        "double f(double x) { return g(x) * x; }\n" \
        "int main(void) { return __enzyme_autodiff((void*)f, 1.5) != 3.0; }\n"
    (tmp_path / "w.c").write_text(src)
    build = run("zymase", ["cc", "-O2", "-Werror", "w.c", "-o", "exe"], cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    import subprocess

    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0
    (tmp_path / "n.c").write_text(src.replace("enzyme_inactive", "enzyme_nofree"))
    one_error(run("zymase", ["cc", "-O2", "-Werror", "n.c", "-o", "exe2"], cwd=tmp_path),
              "n.c:3:16: attribute 'enzyme_nofree' is not implemented")


def test_an_identifier_named_like_an_attribute_is_left_alone(tmp_path):
    # the attribute header is included only when the attributes are used
    (tmp_path / "ident.c").write_text(
        DECLS + "struct opts { int enzyme_inactive; };\n"
        "double f(double x) { struct opts o = {3}; return o.enzyme_inactive * x * x; }\n"
        "int main(void) { return __enzyme_autodiff((void*)f, 2.0) != 12.0; }\n")
    build = run("zymase", ["cc", "-O2", "ident.c", "-o", "exe"], cwd=tmp_path)
    assert build.returncode == 0, build.stderr
    import subprocess

    assert subprocess.run([str(tmp_path / "exe")]).returncode == 0


HAND_WRITTEN = """
declare double @__enzyme_autodiff(ptr, ...)
declare double @__enzyme_fwddiff(ptr, ...)

define double @scale(double %x) "enzyme_inactive" {
  %y = fmul double %x, 3.0
  ret double %y
}

define double @mylog(double %x) "enzyme_math"="log" {
  %y = fmul double %x, 5.0
  ret double %y
}

define double @f(double %x) {
  %s = call double @scale(double %x)
  %l = call double @mylog(double %x)
  %a = fmul double %s, %x
  %b = fadd double %a, %l
  ret double %b
}

define double @df(double %x) {
  %d = call double (ptr, ...) @__enzyme_autodiff(ptr @f, double %x)
  ret double %d
}

define double @tf(double %x) {
  %d = call double (ptr, ...) @__enzyme_fwddiff(ptr @f, double %x, double 1.0)
  ret double %d
}
"""


@pytest.mark.parametrize("level", [0, 2])
def test_enzyme_function_attributes_in_hand_written_ir(level):
    # f = scale(x) x + mylog(x), scale inactive, mylog like log: df = 3x + 1/x
    from zymase.frontends.c import Timings, differentiate_llvm_ir
    from zymase.llvm import jit as jit_module, toolchain

    ll = differentiate_llvm_ir(HAND_WRITTEN, "hand.ll", level, Timings())
    module = jit_module.jit(toolchain.optimize(ll, level), opt=level)
    for name in ("df", "tf"):
        fn = module.function(name, ctypes.c_double, ctypes.c_double)
        for x in (0.5, 2.0):
            assert fn(x) == pytest.approx(3 * x + 1 / x, rel=1e-12), (name, x)
