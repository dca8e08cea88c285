#!/usr/bin/env python3
"""Differentiating before vs after lowering: code size and run time of the gradient.

Two workloads, each written twice:

* ``loop nest``: ``f(A) = sum_ij sin(A_ij) * A_ij^2`` as two ``scf.for`` loops with an
  ``iter_args`` accumulator over a ``memref<?x?xf64>``;
* ``linalg reduction``: the same sum as one ``linalg.generic`` with two reduction
  dimensions into a ``memref<f64>`` accumulator.

"before lowering, scf level" is what ``zymase.mlir.compile`` does with the
structured source by default: linalg -> scf, the enzyme pass differentiates the
``scf.for`` regions (rules/scf.py), remove-unnecessary-enzyme-ops turns the push/pop
caches into memref buffers sized by the trip counts, then lower-to-llvm.
"before lowering, cf level" (``structured_ad=False``) lowers scf -> cf first, so AD
sees cf + memref (branches, ``memref.load`` carrying multi-dimensional indices). "after lowering" differentiates the llvm-dialect
form of the same code (what lower-to-llvm produces for the loops: pointer, GEP,
llvm branches; the accumulator of the linalg form an ``llvm.alloca``), written with a
raw data pointer and sizes instead of a memref descriptor, since the llvm-level AD
takes pointers, not descriptors.

Reported per variant: ops in the module after AD + lower-to-llvm (llvm dialect,
whole module: primal, derivative and tape helpers), LLVM IR instructions before and
after the O2 pipeline (whole module, no ABI wrappers), and the gradient's run time
(best of repeats, same process, on a 1000 x 1000 array), checked against the closed
form first.

    python bench/multilevel.py [--size N] [--repeats R]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "mlir"))

import zymase.mlir  # noqa: E402
from test_multilevel import LLVM as LOOP_LLVM  # noqa: E402  (the same text the test checks)
from test_multilevel import SCF as LOOP_SCF  # noqa: E402

DUP, OUT = "#enzyme<activity enzyme_dup>", "#enzyme<activity enzyme_activenoneed>"

LINALG = f"""
func.func private @f(%a: memref<?x?xf64>) -> f64 {{
  %acc = memref.alloca() : memref<f64>
  %z = arith.constant 0.0 : f64
  memref.store %z, %acc[] : memref<f64>
  linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ()>], iterator_types = ["reduction", "reduction"]}} ins(%a : memref<?x?xf64>) outs(%acc : memref<f64>) {{
  ^bb0(%x: f64, %s: f64):
    %sx = math.sin %x : f64
    %xx = arith.mulf %x, %x : f64
    %t = arith.mulf %sx, %xx : f64
    %u = arith.addf %s, %t : f64
    linalg.yield %u : f64
  }}
  %r = memref.load %acc[] : memref<f64>
  func.return %r : f64
}}
func.func @grad(%A: memref<?x?xf64>, %dA: memref<?x?xf64>) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%A, %dA, %one) {{activity = [{DUP}], ret_activity = [{OUT}]}} : (memref<?x?xf64>, memref<?x?xf64>, f64) -> ()
  func.return
}}
"""

# The linalg form after lowering: the accumulator lives in memory and is read,
# updated and written in every iteration, as linalg.generic on memrefs means.
LINALG_LLVM = f"""
llvm.func internal @f(%p: !llvm.ptr, %n: i64, %m: i64) -> f64 {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %z = llvm.mlir.constant(0.0 : f64) : f64
  %acc = llvm.alloca %c1 x f64 : (i64) -> !llvm.ptr
  llvm.store %z, %acc : f64, !llvm.ptr
  llvm.br ^outer(%c0 : i64)
^outer(%i: i64):
  %more_i = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more_i, ^inner_entry, ^done
^inner_entry:
  llvm.br ^inner(%c0 : i64)
^inner(%j: i64):
  %more_j = llvm.icmp "slt" %j, %m : i64
  llvm.cond_br %more_j, ^body, ^inner_exit
^body:
  %row = llvm.mul %i, %m : i64
  %k = llvm.add %row, %j : i64
  %q = llvm.getelementptr %p[%k] : (!llvm.ptr, i64) -> !llvm.ptr, f64
  %x = llvm.load %q : !llvm.ptr -> f64
  %s = llvm.load %acc : !llvm.ptr -> f64
  %sx = llvm.call_intrinsic "llvm.sin.f64"(%x) : (f64) -> f64
  %xx = llvm.fmul %x, %x : f64
  %t = llvm.fmul %sx, %xx : f64
  %u = llvm.fadd %s, %t : f64
  llvm.store %u, %acc : f64, !llvm.ptr
  %j1 = llvm.add %j, %c1 : i64
  llvm.br ^inner(%j1 : i64)
^inner_exit:
  %i1 = llvm.add %i, %c1 : i64
  llvm.br ^outer(%i1 : i64)
^done:
  %r = llvm.load %acc : !llvm.ptr -> f64
  llvm.return %r : f64
}}
func.func @grad(%p: !llvm.ptr, %dp: !llvm.ptr, %n: i64, %m: i64) {{
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%p, %dp, %n, %m, %one) {{activity = [{DUP}, #enzyme<activity enzyme_const>, #enzyme<activity enzyme_const>], ret_activity = [{OUT}]}} : (!llvm.ptr, !llvm.ptr, i64, i64, f64) -> ()
  func.return
}}
"""

# variant -> (text, raw pointer arguments, structured AD)
WORKLOADS = {
    "loop nest": {
        "before lowering, cf level": (LOOP_SCF, False, False),
        "before lowering, scf level": (LOOP_SCF, False, True),
        "after lowering": (LOOP_LLVM, True, False),
    },
    "linalg reduction": {
        "before lowering, cf level": (LINALG, False, False),
        "before lowering, scf level": (LINALG, False, True),
        "after lowering": (LINALG_LLVM, True, False),
    },
}


def _instructions(ll: str) -> int:
    """Instruction lines of LLVM IR text (inside function bodies, no labels)."""
    count, inside = 0, False
    for line in ll.splitlines():
        if line.startswith("define "):
            inside = True
        elif line.startswith("}"):
            inside = False
        elif inside and line.startswith("  ") and line.strip() and not line.lstrip().startswith(";"):
            count += 1
    return count


def sizes(text: str, structured: bool = False) -> tuple[int, int, int]:
    """(llvm-dialect ops after AD + lowering, LLVM IR instructions before O2, after O2),
    by the same steps as zymase.mlir.compile."""
    from zymase.ir import parse_mlir
    from zymase.llvm import toolchain
    from zymase.llvm.writer import write_llvm_ir
    from zymase.transforms.enzyme_pass import run_enzyme_pass
    from zymase.transforms.lower_structured import prepare_for_differentiation
    from zymase.transforms.lower_to_llvm import lower_to_llvm

    from zymase.transforms.enzyme_cleanup import remove_unnecessary_enzyme_ops

    module = parse_mlir(text)
    prepare_for_differentiation(module, structured=structured)
    run_enzyme_pass(module)
    if structured:
        remove_unnecessary_enzyme_ops(module)
    lower_to_llvm(module)
    ops = sum(1 for op in module.walk() if op is not module)
    ll = write_llvm_ir(module)
    return ops, _instructions(ll), _instructions(toolchain.optimize(ll, 2))


def run_time(text: str, raw_pointer: bool, a: np.ndarray, repeats: int, structured: bool = False) -> float:
    """Best-of-``repeats`` seconds of one gradient call, after checking the gradient."""
    grad = zymase.mlir.compile(text, structured_ad=structured).grad
    da = np.zeros_like(a)
    args = (a, da, a.shape[0], a.shape[1]) if raw_pointer else (a, da)
    grad(*args)
    want = np.cos(a) * a * a + 2 * a * np.sin(a)
    np.testing.assert_allclose(da, want, rtol=1e-12, atol=1e-12)
    best = float("inf")
    for _ in range(repeats):
        da[...] = 0.0
        t0 = time.perf_counter()
        grad(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000, help="the array is size x size")
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)
    a = np.random.default_rng(0).uniform(-2.0, 2.0, size=(args.size, args.size))

    print(f"| workload | differentiated | ops after AD + lower-to-llvm | LLVM IR instrs before O2 | after O2 "
          f"| gradient time ({args.size}x{args.size}, best of {args.repeats}) | time / before |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for workload, variants in WORKLOADS.items():
        base = None
        for variant, (text, raw_pointer, structured) in variants.items():
            ops, before, after = sizes(text, structured)
            t = run_time(text, raw_pointer, a, args.repeats, structured)
            base = t if base is None else base
            print(f"| {workload} | {variant} | {ops} | {before} | {after} | {t * 1e3:.2f} ms | {t / base:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
