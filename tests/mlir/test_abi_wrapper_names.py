"""Public MLIR functions named like the symbols zymase's ABI glue adds.

Guards issue 23 item 1 (generated names must not collide with the user's): the
wrapper ``__zymase_abi_f`` of a function ``f`` returning ``i1`` or several values
clashed with a user function of that name ("Redefinition of symbol"). The names tried
are the symbols the glue actually adds to a baseline module.
"""

from __future__ import annotations

import re

import numpy as np

import zymase.mlir

BASELINE = """
func.func @flag(%x: f64) -> i1 {
  %z = arith.constant 0.0 : f64
  %c = arith.cmpf ogt, %x, %z : f64
  return %c : i1
}
func.func @pair(%x: f64) -> (f64, f64) {
  %y = arith.mulf %x, %x : f64
  return %x, %y : f64, f64
}
func.func @first(%a: memref<?xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<?xf64>
  return %v : f64
}
"""


def _glue_symbols() -> list[str]:
    ir = zymase.mlir.compile(BASELINE).llvm_ir
    defined = set(re.findall(r"^define\b[^@]*@([\w.$]+)\(", ir, re.M))
    added = sorted(defined - {"flag", "pair", "first"})
    assert added, "the baseline needs ABI wrappers"
    return added


def test_user_functions_named_like_the_abi_glue():
    names = _glue_symbols()
    extra = "".join(
        f"func.func @{n}() -> (f64, i1) {{\n  %v = arith.constant {k}.5 : f64\n"
        f"  %t = arith.constant true\n  return %v, %t : f64, i1\n}}\n"
        for k, n in enumerate(names)
    )
    m = zymase.mlir.compile(BASELINE + extra)
    assert m.flag(1.0) is True and m.flag(-1.0) is False
    assert m.pair(3.0) == (3.0, 9.0)
    assert m.first(np.array([4.0, 5.0])) == 4.0
    for k, n in enumerate(names):
        assert m[n]() == (k + 0.5, True), n
