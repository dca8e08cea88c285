"""Vector mode through memref and scf on the MLIR path (issue 25 item 2): one
``enzyme.fwddiff`` / ``enzyme.autodiff`` request at width 4 against four width-1
requests with the same tangents or seeds, on a memref stencil in an scf.for that also
writes an output memref and returns a sum (``zymase.mlir.compile`` at -O2). The
settings alternate in one process, each timed as the thread's CPU time, medians of the
rounds, after a first round that is not timed; the lanes are checked against the
width-1 results.

    python bench/mlir_width.py [n] [rounds]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import zymase.mlir

W = 4
DUP = "#enzyme<activity enzyme_dup>"

# out[i] = x[i-1] - 2 x[i] + x[i+1] + 0.1 x[i]^2 x[i+1] + sin(x[i]); returns sum(out[i]^2)
F = """
func.func @f(%x: memref<?xf64>, %out: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f64
  %two = arith.constant 2.0 : f64
  %tenth = arith.constant 0.1 : f64
  %n = memref.dim %x, %c0 : memref<?xf64>
  %last = arith.subi %n, %c1 : index
  %r = scf.for %i = %c1 to %last step %c1 iter_args(%acc = %z) -> (f64) {
    %im = arith.subi %i, %c1 : index
    %ip = arith.addi %i, %c1 : index
    %a = memref.load %x[%im] : memref<?xf64>
    %b = memref.load %x[%i] : memref<?xf64>
    %c = memref.load %x[%ip] : memref<?xf64>
    %b2 = arith.mulf %two, %b : f64
    %d = arith.subf %a, %b2 : f64
    %e = arith.addf %d, %c : f64
    %bb = arith.mulf %b, %b : f64
    %bbc = arith.mulf %bb, %c : f64
    %q = arith.mulf %tenth, %bbc : f64
    %s = math.sin %b : f64
    %v0 = arith.addf %e, %q : f64
    %v = arith.addf %v0, %s : f64
    memref.store %v, %out[%i] : memref<?xf64>
    %vv = arith.mulf %v, %v : f64
    %acc2 = arith.addf %acc, %vv : f64
    scf.yield %acc2 : f64
  }
  func.return %r : f64
}
"""


def requests(width: int) -> str:
    mem = "memref<?xf64>"
    lanes = ", ".join(f"%dx{k}: {mem}" for k in range(width))
    olanes = ", ".join(f"%do{k}: {mem}" for k in range(width))
    seeds = ", ".join(f"%s{k}: f64" for k in range(width))
    ops = lambda p: ", ".join(f"%{p}{k}" for k in range(width))  # noqa: E731
    types = lambda t: ", ".join([t] * width)  # noqa: E731
    attr = f", width = {width} : i64" if width > 1 else ""
    results = ", ".join(f"%t#{k}" for k in range(width)) if width > 1 else "%t"
    head = f"%t:{width}" if width > 1 else "%t"
    return f"""
func.func @fwd{width}(%x: {mem}, {lanes}, %out: {mem}, {olanes}) -> ({types('f64')}) {{
  {head} = enzyme.fwddiff @f(%x, {ops('dx')}, %out, {ops('do')}) {{activity = [{DUP}, {DUP}],
    ret_activity = [#enzyme<activity enzyme_dupnoneed>]{attr}}}
    : ({mem}, {types(mem)}, {mem}, {types(mem)}) -> ({types('f64')})
  func.return {results} : {types('f64')}
}}
func.func @rev{width}(%x: {mem}, {lanes}, %out: {mem}, {olanes}, {seeds}) {{
  enzyme.autodiff @f(%x, {ops('dx')}, %out, {ops('do')}, {ops('s')}) {{activity = [{DUP}, {DUP}],
    ret_activity = [#enzyme<activity enzyme_activenoneed>]{attr}}}
    : ({mem}, {types(mem)}, {mem}, {types(mem)}, {types('f64')}) -> ()
  func.return
}}
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 9
    m = zymase.mlir.compile(F + requests(1) + requests(W), opt_level=2)
    rng = np.random.default_rng(0)
    x = rng.normal(size=n)
    tangents = [rng.normal(size=n) for _ in range(W)]
    seeds = [1.0, -0.5, 2.0, 0.25]
    out = np.zeros(n)
    douts = [np.zeros(n) for _ in range(W)]
    dxs = [np.zeros(n) for _ in range(W)]

    def primal():
        return m.f(x, out)

    def fwd_wide():
        return m.fwd4(x, *tangents, out, *douts)

    def fwd_narrow():
        return [m.fwd1(x, tangents[k], out, douts[k]) for k in range(W)]

    def rev_wide():
        for d in (*dxs, *douts):
            d[:] = 0
        m.rev4(x, *dxs, out, *douts, *seeds)
        return [d.copy() for d in dxs]

    def rev_narrow():
        got = []
        for k in range(W):
            dxs[k][:] = 0
            douts[k][:] = 0
            m.rev1(x, dxs[k], out, douts[k], seeds[k])
            got.append(dxs[k].copy())
        return got

    settings = {"primal": primal, "forward width 4": fwd_wide, "forward 4 x width 1": fwd_narrow,
                "reverse width 4": rev_wide, "reverse 4 x width 1": rev_narrow}
    times = {name: [] for name in settings}
    results = {}
    for r in range(rounds + 1):
        for name, fn in settings.items():
            t = time.thread_time()
            results[name] = fn()
            if r:
                times[name].append(time.thread_time() - t)
    for a, b in (("forward width 4", "forward 4 x width 1"), ("reverse width 4", "reverse 4 x width 1")):
        diff = max(float(np.max(np.abs(np.asarray(p) - np.asarray(q)) / (1 + np.abs(np.asarray(q)))))
                   for p, q in zip(results[a], results[b]))
        assert diff < 1e-12, (a, diff)
    med = {name: float(np.median(t)) for name, t in times.items()}
    print(f"n={n}, median of {rounds} rounds (thread CPU time)")
    for name, t in med.items():
        print(f"  {name:22s} {t * 1e3:8.3f} ms  {t / med['primal']:6.2f} x primal")
    print(f"  forward: width 4 / 4 x width 1 = {med['forward width 4'] / med['forward 4 x width 1']:.2f}")
    print(f"  reverse: width 4 / 4 x width 1 = {med['reverse width 4'] / med['reverse 4 x width 1']:.2f}")


if __name__ == "__main__":
    main()
