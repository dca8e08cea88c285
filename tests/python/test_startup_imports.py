"""What each path imports (issue 29 item 5, and the start-up part of the compile-time
targets): importing xDSL's dialects is most of a ``zymase cc`` start-up and of the first
``zymase.grad`` call's overhead, so ``zymase cc`` imports neither Numba nor JAX nor the
StableHLO dialect and rules nor the dialects only MLIR input uses (linalg, tensor,
complex, affine, and the standard ones: func, arith, math, cf, scf, memref, with their
rules and lowerings); the Numba path imports neither the StableHLO nor the standard ones. zymase.ir imports
those on first use and contexts load them when the parser meets them
(``zymase/ir/__init__.py``); the last test checks that this changes no rule the registry
gives any op and that the parser still reads every dialect.

Each check runs in a fresh Python process and reads its ``sys.modules`` after the work
is done (a derivative built and run), so that an import anywhere on the path counts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

#: imported by no path but the MLIR and JAX ones
MLIR_ONLY = ("xdsl.dialects.linalg", "xdsl.dialects.tensor", "xdsl.dialects.complex", "xdsl.dialects.affine",
             "zymase.ir.affine_ext")
STABLEHLO = ("zymase.ir.stablehlo", "zymase.autodiff.hlo", "zymase.autodiff.rules.stablehlo")
#: the standard dialects, zymase's extensions of them, their rules and lowerings: the C and
#: Numba paths build llvm-dialect ops only (zymase/ir/on_first_use.py)
STANDARD = ("xdsl.dialects.func", "xdsl.dialects.arith", "xdsl.dialects.math", "xdsl.dialects.cf",
            "xdsl.dialects.scf", "xdsl.dialects.memref", "zymase.ir.arith_ext", "zymase.ir.scf_ext",
            "zymase.ir.memref_ext", "zymase.autodiff.rules.arith", "zymase.autodiff.rules.math",
            "zymase.autodiff.rules.scf", "zymase.autodiff.rules.memref", "zymase.transforms.lower_standard_ops",
            "zymase.transforms.lower_memref")

# a loop whose reverse sweep tapes (the tape runtime's MLIR is parsed too)
PROGRAM = r"""
#include <math.h>
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
static double f(double x) {
    double s = x;
    for (int i = 0; i < 5; i++) s = sin(s) * x;
    return s;
}
int main(void) {
    double h = 1e-6, x = 0.7;
    double fd = (f(x + h) - f(x - h)) / (2 * h);
    double d = __enzyme_autodiff((void *)f, x);
    printf("%d\n", fabs(d - fd) < 1e-6);
    return 0;
}
"""


def _modules_after(script: str, cwd) -> list[str]:
    """The modules loaded in a fresh process once ``script`` has run (it prints nothing)."""
    dump = "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script) + dump], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _prefixed(modules: list[str], prefixes: tuple[str, ...]) -> list[str]:
    return [m for m in modules if m.startswith(prefixes)]


def test_zymase_cc_imports_neither_numba_nor_jax_nor_stablehlo_nor_mlir_dialects(tmp_path):
    (tmp_path / "grad.c").write_text(PROGRAM)
    modules = _modules_after("""
        import subprocess
        from zymase.cli import main
        assert main(["cc", "-O2", "--no-cache", "grad.c", "-o", "grad"]) == 0
        assert subprocess.run(["./grad"], capture_output=True, text=True).stdout.strip() == "1"
        """, tmp_path)
    assert "zymase.autodiff.reverse" in modules and "zymase.llvm.reader" in modules  # the engine ran
    assert _prefixed(modules, ("numba", "jax")) == []
    assert _prefixed(modules, STABLEHLO + MLIR_ONLY) == []
    assert [m for m in modules if m in STANDARD] == []
    # the parsed runtime's cache key names xDSL's version without importlib.metadata
    assert "importlib.metadata" not in modules


def test_pickle_identity_names_xdsls_version_as_xdsl_does():
    import sys

    import xdsl

    from zymase import ir

    assert ir._pickle_identity() == f"xdsl {xdsl.__version__} python {sys.version}"


def test_zymase_cc_needs_no_xdsl_before_the_engine_runs(tmp_path):
    """The pre-AD pipeline, the split and the part's cache lookup import none of the
    engine (xDSL, its dialects, the reader, the AD passes): a build whose part is cached
    never loads it. The modules are read where the engine's first step would begin."""
    (tmp_path / "grad.c").write_text(PROGRAM)
    script = textwrap.dedent("""
        import json, sys
        from zymase.frontends import c as fc
        from zymase.llvm import toolchain

        class Stop(Exception):
            pass

        def stop(text, *args, **kwargs):
            raise Stop(sorted(sys.modules), "__enzyme_autodiff" in text)

        fc._import_differentiate_export = stop
        ll = toolchain.c_to_llvm_ir("grad.c", [], 2)
        try:
            fc.differentiate_llvm_ir(ll, "grad.c", 2, fc.Timings(), only_reachable=True, cache=True)
        except Stop as reached:
            print(json.dumps(list(reached.args)))
        """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    modules, marker_in_part = json.loads(proc.stdout.strip().splitlines()[-1])
    assert marker_in_part and "zymase.llvm.reachable" in modules  # preopt and the split ran
    assert _prefixed(modules, ("xdsl", "zymase.ir", "zymase.llvm.reader", "zymase.autodiff.driver")) == []


def test_first_grad_imports_no_stablehlo(tmp_path):
    pytest.importorskip("numba")
    modules = _modules_after("""
        import numpy as np
        import numba
        import zymase

        @numba.njit
        def f(x):
            s = 0.0
            for i in range(x.shape[0]):
                s += np.sin(x[i]) * x[i]
            return s

        x = np.linspace(0.1, 1.0, 4)
        g = zymase.grad(f)(x)
        assert np.allclose(g, np.sin(x) + x * np.cos(x))
        """, tmp_path)
    assert "zymase.autodiff.reverse" in modules
    assert _prefixed(modules, ("jax",) + STABLEHLO) == []
    assert [m for m in modules if m in STANDARD] == []


def test_dialects_loaded_on_demand_change_no_rule_and_still_parse(tmp_path):
    # the registry is keyed by op class: with every dialect and every rule module imported
    # up front, each op class of every dialect gets the rule it gets when the C path has
    # run first and the rest is imported afterwards, on demand
    snapshot = """
        import json, sys
        from zymase.autodiff.registry import REGISTRY, load_all_rules
        from zymase.autodiff import hlo
        hlo._load_rules()
        load_all_rules()
        from zymase.ir import make_context
        ctx = make_context()
        for name in list(ctx.registered_dialect_names):
            ctx.get_optional_dialect(name)
        rules = {}
        for op in sorted(ctx.loaded_ops, key=lambda c: c.name):
            found = REGISTRY.lookup(object.__new__(op))  # (imports the rules of a standard dialect)
            scanned = REGISTRY.by_op.get(op)  # lookup as it was before it kept its answers
            if scanned is None:
                scanned = next((r for c, r in REGISTRY.by_op.items() if issubclass(op, c)), None)
            assert found is scanned, op.name
            for _ in range(2):  # the answer kept
                assert REGISTRY.lookup(object.__new__(op)) is scanned, op.name
            rules[op.name] = None if scanned is None else f"{type(scanned).__module__}.{type(scanned).__qualname__}"
        print(json.dumps(rules), file=sys.stderr)
        """
    eager = "import zymase.ir\nfor n in ('stablehlo', 'affine_ext', 'linalg', 'tensor', 'affine', 'complex'):\n" \
            "    getattr(zymase.ir, n)\n" \
            "zymase.ir.on_first_use.load_all()\n"
    c_first = "import zymase.frontends.c, zymase.transforms.enzyme_pass, zymase.llvm.reader\n"
    results = []
    for prelude in (eager, c_first):
        proc = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(snapshot)], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        results.append(json.loads(proc.stderr.strip().splitlines()[-1]))
    assert results[0] == results[1]
    assert len(results[0]) > 300 and "stablehlo.add" in results[0] and results[0]["stablehlo.add"] is not None
    assert all(results[0][op] is not None for op in ("arith.addf", "math.sin", "scf.for", "memref.load", "memref.cast"))

    from zymase.ir import parse_mlir, print_mlir

    text = textwrap.dedent("""
        func.func @f(%a: tensor<4xf64>, %m: memref<4xf64>, %c: complex<f64>) -> tensor<4xf64> {
          %s = "stablehlo.add"(%a, %a) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64>
          %e = tensor.extract %s[] : tensor<4xf64>
          %r = complex.re %c : complex<f64>
          affine.for %i = 0 to 4 {
            %v = affine.load %m[%i] : memref<4xf64>
          }
          func.return %s : tensor<4xf64>
        }
        """)
    printed = print_mlir(parse_mlir(text.replace("tensor.extract %s[] : tensor<4xf64>",
                                                 "tensor.extract %s[%i0] : tensor<4xf64>")
                                    .replace("%e =", "%i0 = arith.constant 0 : index\n  %e =")))
    for op in ("stablehlo.add", "tensor.extract", "complex.re", "affine.for", "affine.load"):
        assert op in printed


def test_registry_lookup_sees_a_rule_registered_after_a_miss():
    # the registry keeps lookup's answer per op class, None included: registering a rule
    # later (a plug-in dialect's, the StableHLO modules on first use) must be seen
    from zymase.autodiff.registry import Registry, Rule

    class Base:
        pass

    class Extended(Base):
        pass

    registry, rule, exact = Registry(), Rule(), Rule()
    assert registry.lookup(Extended()) is None
    registry.register(Base, rule)
    assert registry.lookup(Extended()) is rule and registry.lookup(Base()) is rule
    registry.register(Extended, exact)
    assert registry.lookup(Extended()) is exact
