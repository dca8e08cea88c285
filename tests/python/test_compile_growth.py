"""Compile work grows linearly with the size of the module (issue 29 item 1).

Generated C modules of about 1,000 and 10,000 LLVM instructions go through the LLVM
path of ``zymase cc -O2`` up to the derivative IR (pre-AD pipeline, import, AD,
export: ``frontends/c.differentiate_llvm_ir``). Both the number of functions and the
length of each grow (by about sqrt(10) each), so a step quadratic in either, such as
a scan of the whole module for every differentiated function, or a walk of a whole
body for every instruction, shows. The measure is a count, not seconds: the
operations xDSL hands out when any code iterates over a block (every walk, every
loop over ``block.ops``), per instruction of the imported module. It must stay flat
within 2x: a walk of a whole body per instruction makes it grow with the length of the
functions (about 3x here). A scan of the whole module per function adds less than the
engine's own work per instruction at this size, so the second test counts what such
a scan visits first, the module's top level, per function, from 8 to 64 functions.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from xdsl.ir import core as xdsl_core

from zymase.frontends import c as c_frontend
from zymase.ir import ModuleOp
from zymase.llvm import reader as llvm_reader

CLANG = shutil.which("clang-19") or "/usr/bin/clang-19"
pytestmark = pytest.mark.skipif(not Path(CLANG).exists(), reason="clang-19 not installed")


def _program(functions: int, statements: int) -> str:
    """``functions`` straight-line functions of ``statements`` statements each (about
    five instructions a statement), each differentiated by a wrapper of its own."""
    lines = ["#include <math.h>", "extern void __enzyme_autodiff(void *, ...);"]
    for f in range(functions):
        lines.append(f"double f{f}(const double *x) {{\n  double s = x[0];")
        for k in range(statements):
            lines.append(f"  s = s * x[{k % 7}] + sin(x[{(3 * k + f) % 11}] * s + {k + 0.5 * f});")
        lines.append("  return s;\n}")
        lines.append(f"void g{f}(const double *x, double *dx) {{ __enzyme_autodiff((void *)f{f}, x, dx); }}")
    return "\n".join(lines) + "\n"


class _OpsVisited:
    """Counts the operations handed out by xDSL's block iterators (forward and
    reverse) while installed: all of them, and those at the top level of a module
    (functions and globals: what a scan of the module's symbols visits)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch):
        self.count = 0
        self.top_level = 0
        for cls in (xdsl_core._BlockOpsIterator, xdsl_core._BlockOpsReverseIterator):
            monkeypatch.setattr(cls, "__next__", self._counting(cls.__next__))

    def _counting(self, step):
        def __next__(iterator):
            op = step(iterator)
            self.count += 1
            if isinstance(op.parent_op(), ModuleOp):
                self.top_level += 1
            return op
        return __next__


def _work_per_instruction(functions: int, statements: int, tmp_path: Path,
                          monkeypatch: pytest.MonkeyPatch) -> tuple[int, float, float]:
    """(instructions imported, ops visited per instruction, top-level ops visited per
    function)."""
    source = tmp_path / f"grow_{functions}x{statements}.c"
    source.write_text(_program(functions, statements))
    ll = subprocess.run([CLANG, "-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    instructions = 0
    read = llvm_reader.read_llvm_ir

    def counting_read(text, *args, **kwargs):
        nonlocal instructions
        module = read(text, *args, **kwargs)
        instructions = sum(1 for op in module.walk() if op.parent_op() is not module and op.parent_op() is not None)
        return module

    with monkeypatch.context() as patch:
        patch.setattr(llvm_reader, "read_llvm_ir", counting_read)
        visited = _OpsVisited(patch)
        out = c_frontend.differentiate_llvm_ir(ll, source.name, 2, c_frontend.Timings())
        work, top_level = visited.count, visited.top_level
    assert out.count("define internal") >= functions  # one derivative per function (or more)
    assert instructions > 0
    return instructions, work / instructions, top_level / functions


def test_ad_work_per_instruction_is_flat_from_1k_to_10k_instructions(tmp_path, monkeypatch):
    # issue 29 item 1 (linear growth): 6 functions of 34 statements, then 20 of 100
    small, per_small, _ = _work_per_instruction(6, 34, tmp_path, monkeypatch)
    large, per_large, _ = _work_per_instruction(20, 100, tmp_path, monkeypatch)
    assert 700 <= small <= 1500 and 7000 <= large <= 15000, (small, large)
    assert per_large <= 2 * per_small, (
        f"ops visited per instruction: {per_small:.0f} at {small} instructions, "
        f"{per_large:.0f} at {large}: AD's work grows faster than the module")


def test_module_is_not_scanned_once_per_differentiated_function(tmp_path, monkeypatch):
    # issue 29 item 1 (a quadratic step found): prepare read the module's inactive
    # globals by a scan of all its functions and globals, for every function it
    # differentiated. Per function, the top-level ops visited are a constant (the
    # module's own scans, spread over its functions) plus, with such a scan, the
    # number of functions: 8 then 64 one-statement functions tell them apart
    _, _, few = _work_per_instruction(8, 1, tmp_path, monkeypatch)
    _, _, many = _work_per_instruction(64, 1, tmp_path, monkeypatch)
    assert many <= 1.3 * few, (
        f"top-level ops visited per function: {few:.0f} with 8 functions, {many:.0f} with 64: "
        "the module is scanned once per function")


def _ops_visited_by(step_module, step_name: str, functions: int, statements: int, tmp_path: Path,
                    monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(ops visited by ``step_module.step_name`` in one ``zymase cc -O2`` differentiation
    of the generated program, ops in the module it was given)."""
    source = tmp_path / f"steps_{functions}x{statements}.c"
    source.write_text(_program(functions, statements))
    ll = subprocess.run([CLANG, "-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    step = getattr(step_module, step_name)
    seen = {"visited": 0, "size": 0}

    def counting_step(module, *args, **kwargs):
        seen["size"] = sum(1 for _ in module.walk())
        with monkeypatch.context() as patch:
            visited = _OpsVisited(patch)
            result = step(module, *args, **kwargs)
            seen["visited"] += visited.count
        return result

    with monkeypatch.context() as patch:
        patch.setattr(step_module, step_name, counting_step)
        c_frontend.differentiate_llvm_ir(ll, source.name, 2, c_frontend.Timings())
    assert seen["size"] > 0, f"{step_name} did not run"
    return seen["visited"], seen["size"]


def test_marker_cleanup_walks_the_module_once(tmp_path, monkeypatch):
    # issue 29 item 1 (no repeated whole-module walks): dropping the marker loads and
    # declarations left after the last round walked the module to a fixpoint, three
    # or four times (about 10% of AD on gmm); one walk finds every candidate
    from zymase.llvm import markers

    visited, size = _ops_visited_by(markers, "finish_markers", 4, 20, tmp_path, monkeypatch)
    assert visited <= 1.2 * size, f"finish_markers visited {visited} ops of a {size}-op module"


def test_tape_lowering_walks_an_llvm_module_once_before_lowering(tmp_path, monkeypatch):
    # issue 29 item 1 (no repeated whole-module walks): on the C path the module after
    # the enzyme pass holds llvm and enzyme ops only, and lowering it walked it five
    # times (a look for structured ops, the structured rewrites' own walks, a record of
    # memref operands, then each function: 5x the module's ops); one look at the op
    # names, then the functions holding enzyme ops (xDSL's list(block.ops) counts them
    # twice: len() walks the block), about 2.5x
    from zymase.transforms import lower_to_llvm

    visited, size = _ops_visited_by(lower_to_llvm, "lower_to_llvm", 4, 20, tmp_path, monkeypatch)
    assert visited <= 3 * size, f"lower_to_llvm visited {visited} ops of a {size}-op module"


@pytest.mark.parametrize("step", ["outline_parallel_regions", "restore_parallel_regions"])
def test_openmp_steps_do_not_walk_a_module_without_parallel_regions(step, tmp_path, monkeypatch):
    # issue 29 item 1 (no repeated whole-module walks): around every enzyme pass round,
    # the OpenMP steps walked every function body looking for fork calls and calls of
    # outlined regions; without a fork call declared or an outlined region defined
    # there is nothing to find, which the module's symbols tell
    from zymase.transforms import openmp

    visited, size = _ops_visited_by(openmp, step, 4, 20, tmp_path, monkeypatch)
    assert visited <= 0.1 * size, f"{step} visited {visited} ops of a {size}-op module"


def _top_level_visits_per_function(functions: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> float:
    """Top-level ops visited per function while ``zymase cc -O0`` differentiates
    ``functions`` functions that each allocate and free a buffer (whose derivatives
    declare calloc and free, and ask for them once per allocation and free)."""
    lines = ["#include <stdlib.h>", "#include <math.h>", "extern void __enzyme_autodiff(void *, ...);"]
    for f in range(functions):
        lines.append(f"double f{f}(const double *x) {{ double *t = malloc(2 * sizeof(double)); "
                     f"t[0] = sin(x[0]) * {f + 1}.0; t[1] = t[0] * x[1]; double s = t[1]; free(t); return s; }}")
        lines.append(f"void g{f}(const double *x, double *dx) {{ __enzyme_autodiff((void *)f{f}, x, dx); }}")
    source = tmp_path / f"heap_{functions}.c"
    source.write_text("\n".join(lines) + "\n")
    ll = subprocess.run([CLANG, "-O0", "-Xclang", "-disable-O0-optnone", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    with monkeypatch.context() as patch:
        visited = _OpsVisited(patch)
        out = c_frontend.differentiate_llvm_ir(ll, source.name, 0, c_frontend.Timings())
        top_level = visited.top_level
    assert out.count("@calloc(") >= functions and out.count("@free(") >= 2 * functions
    return top_level / functions


def test_module_is_not_scanned_once_per_declaration(tmp_path, monkeypatch):
    # issue 29 item 1 (a quadratic step found in session 35): a derivative that allocates
    # or frees shadow memory asked whether calloc and free were declared by a scan of the
    # module's functions and globals, at every allocation and free (and so did the
    # null-shadow and partial-copy checks for their messages and helpers); 8 then 64
    # functions that each allocate and free: per function the scans visited 150 then 250
    # top-level ops, now about 130 then 110 (autodiff/module_symbols.py)
    few = _top_level_visits_per_function(8, tmp_path, monkeypatch)
    many = _top_level_visits_per_function(64, tmp_path, monkeypatch)
    assert many <= 1.3 * few, (
        f"top-level ops visited per function: {few:.0f} with 8 functions, {many:.0f} with 64: "
        "the module is scanned once per declaration")


def test_type_analysis_does_not_walk_the_module_per_function(tmp_path, monkeypatch):
    # issue 29 item 1 (analyses computed once): each analyze_types call walked the whole
    # module to see whether any access carries TBAA; at -O0 none does, so every call
    # walked all of it (quadratic in the number of functions that copy memory). The
    # driver now reads it once per module
    from zymase.analysis import types as type_analysis

    functions = 8
    lines = ["#include <string.h>", "extern void __enzyme_autodiff(void *, ...);"]
    for f in range(functions):
        lines.append(f"void f{f}(const double *x, double *y) {{ memcpy(y, x, 2 * sizeof(double)); "
                     f"y[0] *= y[1] + {f}.0; }}")
        lines.append(f"void g{f}(const double *x, double *dx, double *y, double *dy) "
                     f"{{ __enzyme_autodiff((void *)f{f}, x, dx, y, dy); }}")
    source = tmp_path / "copies.c"
    source.write_text("\n".join(lines) + "\n")
    ll = subprocess.run([CLANG, "-O0", "-Xclang", "-disable-O0-optnone", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    analyze = type_analysis.analyze_types
    seen = {"calls": 0, "visited": 0, "size": 0}

    def counting_analyze(func_op, module=None, **kwargs):
        seen["calls"] += 1
        seen["size"] = max(seen["size"], sum(1 for _ in module.walk()))
        with monkeypatch.context() as patch:
            visited = _OpsVisited(patch)
            info = analyze(func_op, module, **kwargs)
            seen["visited"] += visited.count
        return info

    with monkeypatch.context() as patch:
        patch.setattr(type_analysis, "analyze_types", counting_analyze)
        c_frontend.differentiate_llvm_ir(ll, source.name, 0, c_frontend.Timings())
    assert seen["calls"] == functions, seen
    assert seen["visited"] <= 2 * seen["size"], (
        f"{seen['calls']} type analyses visited {seen['visited']} ops of a module of at most {seen['size']}")


def test_alias_scope_lists_are_built_once_per_scope_set(tmp_path, monkeypatch):
    # issue 29 item 1 (xDSL's machinery in hot loops): annotate_alias_scopes built, for
    # every load and store, a new string attribute for each scope of the function (the
    # access's scopes and all the others): accesses x scopes attributes, each verified by
    # xDSL (about 4,400 of hand's 18,000 attributes). Accesses with the same scopes share
    # one pair of lists
    from xdsl.ir import core as xdsl_ir

    from zymase.transforms import alias_scopes

    source = tmp_path / "scopes.c"
    body = " ".join(f"y[{k}] = a[{k}] * b[{k % 3}] + c[{(k + 1) % 5}];" for k in range(24))
    source.write_text("extern void __enzyme_autodiff(void *, ...);\n"
                      "void f(const double *restrict a, const double *restrict b, const double *restrict c, "
                      f"double *restrict y) {{ {body} }}\n"
                      "void g(double *a, double *da, double *b, double *db, double *c, double *dc, double *y, "
                      "double *dy) { __enzyme_autodiff((void *)f, a, da, b, db, c, dc, y, dy); }\n")
    ll = subprocess.run([CLANG, "-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    annotate = alias_scopes.annotate_alias_scopes
    seen = {"attributes": 0, "annotated": 0}

    def counting(module):
        init = xdsl_ir.Attribute.__post_init__

        def post_init(attr):
            seen["attributes"] += 1
            init(attr)

        with monkeypatch.context() as patch:
            patch.setattr(xdsl_ir.Attribute, "__post_init__", post_init)
            annotate(module)
        seen["annotated"] = sum(1 for op in module.walk() if alias_scopes.NOALIAS in op.attributes)

    with monkeypatch.context() as patch:
        patch.setattr(alias_scopes, "annotate_alias_scopes", counting)
        c_frontend.differentiate_llvm_ir(ll, source.name, 2, c_frontend.Timings())
    assert seen["annotated"] >= 100, seen
    assert seen["attributes"] <= seen["annotated"], seen


def test_stencil_gather_builds_the_reverse_cfg_once_per_function(tmp_path, monkeypatch):
    # issue 29 item 1 (analyses computed once): the stencil gather built the CFG of the
    # whole reverse sweep (and its loops) for every counted loop that might qualify,
    # 5-8% of AD on hand and FFT. Loops with fewer than two adds in their reverse block
    # cannot qualify and build none; the others share one CFG until a rewrite
    from zymase.autodiff import stencil_gather

    loops = "".join(f"for (int i = 0; i < n; i++) y{k}[i] = x[i] * x[i] * {k + 1}.0;\n" for k in range(4))
    source = tmp_path / "loops.c"
    source.write_text(
        "extern void __enzyme_autodiff(void *, ...);\n"
        "void f(const double *restrict x, double *restrict y0, double *restrict y1, double *restrict y2,\n"
        "       double *restrict y3, double *restrict s, int n) {\n" + loops +
        "  for (int i = 1; i < n - 1; i++) s[i] = x[i - 1] - 2.0 * x[i] + x[i + 1];\n}\n"
        "void g(double *x, double *dx, double *y0, double *dy0, double *y1, double *dy1, double *y2, double *dy2,\n"
        "       double *y3, double *dy3, double *s, double *ds, int n) {\n"
        "  __enzyme_autodiff((void *)f, x, dx, y0, dy0, y1, dy1, y2, dy2, y3, dy3, s, ds, n);\n}\n")
    ll = subprocess.run([CLANG, "-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "-o", "-",
                         str(source)], capture_output=True, text=True, check=True).stdout
    seen = {"cfgs": 0, "gathered": 0}
    build, gather = stencil_gather.CFG.build, stencil_gather.StencilGather._gather

    class CountingCFG:
        @staticmethod
        def build(*args, **kwargs):
            seen["cfgs"] += 1
            return build(*args, **kwargs)

    def counting_gather(self, *args, **kwargs):
        seen["gathered"] += 1
        return gather(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(stencil_gather, "CFG", CountingCFG)
        patch.setattr(stencil_gather.StencilGather, "_gather", counting_gather)
        c_frontend.differentiate_llvm_ir(ll, source.name, 2, c_frontend.Timings())
    assert seen["gathered"] == 1, seen  # the stencil's reverse loop is gathered
    assert seen["cfgs"] == 1, seen  # (before: one per loop, 5)


def test_reader_builds_memory_ops_directly_and_shares_their_attributes(monkeypatch):
    # issue 29 item 1 (xDSL's machinery in hot loops): the reader built loads, stores and
    # GEPs through IRDL's generic constructor (about 3x Operation.create) and a new
    # integer attribute for every alignment, ordering and predicate
    from xdsl.irdl import operations as irdl_operations

    from zymase.ir import llvm

    body = "\n".join(f"  %p{k} = getelementptr inbounds double, ptr %x, i64 {k}\n"
                     f"  %v{k} = load double, ptr %p{k}, align 8\n"
                     f"  store double %v{k}, ptr %p{k}, align 8" for k in range(20))
    text = f"define void @f(ptr %x) {{\n{body}\n  ret void\n}}\n"
    seen = {"generic": 0}
    init = irdl_operations.irdl_op_init

    def counting_init(op, *args, **kwargs):
        if isinstance(op, (llvm.LoadOp, llvm.StoreOp, llvm.GEPOp)):
            seen["generic"] += 1
        return init(op, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(irdl_operations, "irdl_op_init", counting_init)
        module = llvm_reader.read_llvm_ir(text, "memory.ll")
    ops = list(module.walk())
    loads = [op for op in ops if isinstance(op, llvm.LoadOp)]
    stores = [op for op in ops if isinstance(op, llvm.StoreOp)]
    geps = [op for op in ops if isinstance(op, llvm.GEPOp)]
    assert len(loads) == len(stores) == len(geps) == 20
    assert seen["generic"] == 0, seen
    assert len({id(op.properties["alignment"]) for op in loads + stores}) == 1
    assert len({id(op.properties["noWrapFlags"]) for op in geps}) == 1
    assert {tuple(op.rawConstantIndices.iter_values()) for op in geps} == {(k,) for k in range(20)}
    assert all(op.inbounds is not None and op.properties["noWrapFlags"].value.data == 3 for op in geps)
