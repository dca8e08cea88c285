"""zymase/ir/on_first_use.py: the standard dialects are imported at their first use, and
naming their classes in an ``OpClasses`` gives every ``isinstance`` the answer the tuple
of the classes gives. Each check runs in a fresh process, where no dialect is imported
yet."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _run(script: str) -> None:
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr


def test_op_classes_answer_as_the_tuple_before_and_after_the_dialect_is_imported():
    _run("""
        import sys
        from zymase.ir import OpClasses, llvm

        sums = OpClasses(llvm.FAddOp, "arith.AddfOp")
        pure = OpClasses(sums, llvm.FPExtOp, "math.FmaOp")
        assert "xdsl.dialects.arith" not in sys.modules  # naming a class imports nothing
        fadd = object.__new__(llvm.FAddOp)
        assert isinstance(fadd, sums) and isinstance(fadd, pure) and not isinstance(object(), pure)
        assert tuple(sums) == (llvm.FAddOp,) and sums + (llvm.FSubOp,) == (llvm.FAddOp, llvm.FSubOp)

        from xdsl.dialects import arith, math  # imported by someone else, not through zymase.ir

        addf, fma = object.__new__(arith.AddfOp), object.__new__(math.FmaOp)
        assert isinstance(addf, sums) and isinstance(addf, pure) and isinstance(fma, pure)
        assert not isinstance(fma, sums) and not isinstance(object.__new__(arith.SubfOp), pure)
        assert (*sums, *pure) == (llvm.FAddOp, arith.AddfOp, llvm.FAddOp, arith.AddfOp, llvm.FPExtOp, math.FmaOp)
        """)


def test_a_module_imported_half_way_is_looked_at_again():
    # a check made while the dialect's module is being imported (its classes not all
    # defined yet) must not keep the incomplete answer once the import has finished
    _run("""
        import importlib.machinery, sys, types
        from zymase.ir import OpClasses

        classes = OpClasses("arith.AddfOp")
        half = types.ModuleType("xdsl.dialects.arith")
        half.__spec__ = importlib.machinery.ModuleSpec("xdsl.dialects.arith", None)
        half.__spec__._initializing = True  # (as importlib marks a module it is executing)
        sys.modules["xdsl.dialects.arith"] = half
        assert tuple(classes) == ()

        class AddfOp:
            pass

        half.AddfOp = AddfOp  # the import goes on; sys.modules does not grow
        half.__spec__._initializing = False
        assert isinstance(AddfOp(), classes)
        """)


def test_every_named_class_exists():
    # a misspelt name would never match: once its module is imported it is an error, and
    # with every standard dialect imported each OpClasses of the engine holds all it names
    _run("""
        import importlib
        import zymase.ir
        from zymase.ir import OpClasses
        from zymase.ir.on_first_use import load_all

        load_all()
        found = 0
        for module in ("autodiff.tape", "autodiff.counted_loops", "autodiff.rounded_partials", "analysis.scf",
                       "analysis.memref", "autodiff.structured", "transforms.lower_to_llvm"):
            for value in vars(importlib.import_module("zymase." + module)).values():
                if isinstance(value, OpClasses):
                    classes = tuple(value)
                    assert not value._pending and all(isinstance(c, type) for c in classes), value
                    found += 1
        assert found >= 15, found
        try:
            OpClasses("arith.AddFOp")
        except AttributeError as e:
            assert "has no AddFOp" in str(e)
        else:
            raise AssertionError("a misspelt class")
        """)


def test_a_dialect_name_imports_its_module_at_the_first_attribute_and_is_it_afterwards():
    _run("""
        import sys
        import zymase.ir
        from zymase.ir import arith, scf_ext

        assert "xdsl.dialects.arith" not in sys.modules and "zymase.ir.scf_ext" not in sys.modules
        assert not hasattr(arith, "__path__")  # probes of special names import nothing
        assert "xdsl.dialects.arith" not in sys.modules
        op = arith.AddfOp
        assert op is sys.modules["xdsl.dialects.arith"].AddfOp and vars(arith)["AddfOp"] is op
        assert scf_ext.ParallelOp.name == "scf.parallel"
        # imported inside xdsl_import's window: formats deferred, the window closed again
        from xdsl.irdl.declarative_assembly_format import FormatProgram
        from zymase.ir import xdsl_import

        assert FormatProgram.from_str is xdsl_import._eager_format
        try:
            arith.NoSuchOp
        except AttributeError:
            pass
        else:
            raise AssertionError("an attribute the module lacks")
        """)


def test_the_rules_and_lowerings_of_a_standard_dialect_are_found_when_its_op_is_first_met():
    # the C path's engine first (no standard dialect, rule or lowering imported), then
    # MLIR text: the parser loads the dialects, the registry and the lowering find theirs
    _run("""
        import sys
        import numpy as np
        import zymase.transforms.enzyme_pass, zymase.transforms.lower_to_llvm, zymase.llvm.reader
        from zymase.autodiff.registry import load_all_rules

        load_all_rules()
        assert not any(m in sys.modules for m in ("xdsl.dialects.arith", "zymase.autodiff.rules.math",
                                                  "zymase.transforms.lower_standard_ops"))
        import zymase.mlir

        text = '''
        func.func @f(%x: f64) -> f64 {
          %s = math.sin %x : f64
          %y = arith.mulf %s, %x : f64
          func.return %y : f64
        }
        func.func @df(%x: f64) -> f64 {
          %one = arith.constant 1.0 : f64
          %d = enzyme.autodiff @f(%x, %one) {activity = [#enzyme<activity enzyme_active>],
                                             ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (f64, f64) -> f64
          func.return %d : f64
        }
        '''
        df = zymase.mlir.compile(text).df
        x = 0.7
        assert abs(df(x) - (np.cos(x) * x + np.sin(x))) < 1e-12, df(x)
        """)
