"""Structured control flow differentiated at the structured level (rules/scf.py):
scf.for with iter_args of several types, scf.if inside a loop and at the top,
scf.while, a triangular loop nest and a loop with no active values, in forward and
reverse mode, at opt levels 0 and 2, against central finite differences and
against the same functions differentiated after lowering scf to cf."""

from __future__ import annotations

import pytest

import zymase.mlir
from adhelpers import central_fd, drivers
from zymase.errors import ZymaseError

FUNCS = r'''
func.func @loop_types(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c5 = arith.constant 5 : index
  %yf = arith.truncf %y : f64 to f32
  %r:3 = scf.for %i = %c0 to %c5 step %c1 iter_args(%a = %x, %b = %yf, %k = %c0) -> (f64, f32, index) {
    %bb = arith.extf %b : f32 to f64
    %p = arith.mulf %a, %bb : f64
    %s = math.sin %p : f64
    %a2 = arith.addf %s, %a : f64
    %half = arith.constant 0.5 : f32
    %b2 = arith.mulf %b, %half : f32
    %af = arith.truncf %a : f64 to f32
    %b3 = arith.addf %b2, %af : f32
    %k2 = arith.addi %k, %c1 : index
    scf.yield %a2, %b3, %k2 : f64, f32, index
  }
  %bo = arith.extf %r#1 : f32 to f64
  %kf = arith.index_cast %r#2 : index to i64
  %kd = arith.sitofp %kf : i64 to f64
  %o = arith.mulf %r#0, %bo : f64
  %o2 = arith.addf %o, %kd : f64
  func.return %o2 : f64
}
func.func @loop_if(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %z = arith.constant 0.0 : f64
  %r = scf.for %i = %c0 to %c6 step %c1 iter_args(%a = %x) -> (f64) {
    %pos = arith.cmpf ogt, %a, %z : f64
    %n = scf.if %pos -> (f64) {
      %t = arith.mulf %a, %y : f64
      %u = math.cos %t : f64
      scf.yield %u : f64
    } else {
      %t = arith.mulf %a, %a : f64
      %v = arith.addf %t, %y : f64
      scf.yield %v : f64
    }
    scf.yield %n : f64
  }
  func.return %r : f64
}
func.func @top_if(%x: f64, %y: f64) -> f64 {
  %c = arith.cmpf ogt, %x, %y : f64
  %r = scf.if %c -> (f64) {
    %p = arith.mulf %x, %y : f64
    %s = math.sin %p : f64
    scf.yield %s : f64
  } else {
    %e = math.exp %x : f64
    %q = arith.mulf %e, %y : f64
    scf.yield %q : f64
  }
  %o = arith.mulf %r, %x : f64
  func.return %o : f64
}
func.func @while_loop(%x: f64, %y: f64) -> f64 {
  %one = arith.constant 1.0 : f64
  %ten = arith.constant 10.0 : f64
  %xx = arith.mulf %x, %x : f64
  %g = arith.addf %one, %xx : f64
  %r = scf.while (%a = %y) : (f64) -> f64 {
    %more = arith.cmpf olt, %a, %ten : f64
    %s = math.sin %a : f64
    %s2 = arith.mulf %s, %s : f64
    %tenth = arith.constant 0.1 : f64
    %s3 = arith.addf %s2, %tenth : f64
    %w = arith.addf %a, %s3 : f64
    scf.condition(%more) %w : f64
  } do {
  ^bb0(%b: f64):
    %m = arith.mulf %b, %g : f64
    %n = arith.addf %m, %xx : f64
    scf.yield %n : f64
  }
  func.return %r : f64
}
func.func @nested(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%a = %y) -> (f64) {
    %ip = arith.addi %i, %c1 : index
    %s = math.sin %a : f64
    %r2 = scf.for %j = %c0 to %ip step %c1 iter_args(%b = %a) -> (f64) {
      %jj = arith.index_cast %j : index to i64
      %jf = arith.sitofp %jj : i64 to f64
      %t = arith.mulf %b, %x : f64
      %u = arith.addf %t, %jf : f64
      %v = math.tanh %u : f64
      %w = arith.addf %v, %s : f64
      scf.yield %w : f64
    }
    scf.yield %r2 : f64
  }
  func.return %r : f64
}
func.func @inactive_loop(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %h = arith.constant 0.5 : f64
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %h) -> (f64) {
    %b = arith.mulf %a, %h : f64
    scf.yield %b : f64
  }
  %o = arith.mulf %r, %x : f64
  %p = arith.mulf %o, %y : f64
  func.return %p : f64
}
'''

NAMES = ["loop_types", "loop_if", "top_if", "while_loop", "nested", "inactive_loop"]
TEXT = FUNCS + "\n".join(drivers(n, 2) for n in NAMES)
POINTS = [(0.3, 0.8), (-0.4, 1.3)]
_CACHE: dict = {}


def _module(opt_level: int, structured: bool = True):
    key = (opt_level, structured)
    if key not in _CACHE:
        _CACHE[key] = zymase.mlir.compile(TEXT, opt_level=opt_level, structured_ad=structured)
    return _CACHE[key]


def _derivatives(m, name, xs):
    rev = list(getattr(m, "d_" + name)(*xs))
    fwd = [getattr(m, f"t{i}_" + name)(*xs) for i in range(2)]
    return rev, fwd


@pytest.mark.parametrize("opt_level", [0, 2])
@pytest.mark.parametrize("name", NAMES)
def test_structured_derivatives_match_finite_differences(opt_level, name):
    m = _module(opt_level)
    # loop_types carries an f32: its finite differences take a wider step over
    # the f32 rounding
    rtol, h = (2e-3, 1e-3) if name == "loop_types" else (1e-6, 1e-5)
    for xs in POINTS:
        rev, fwd = _derivatives(m, name, xs)
        fd = [central_fd(getattr(m, name), xs, i, h) for i in range(2)]
        for got in (rev, fwd):
            assert got == pytest.approx(fd, rel=rtol, abs=1e-7), (name, xs)


@pytest.mark.parametrize("name", NAMES)
def test_structured_and_cf_levels_agree(name):
    structured, lowered = _module(2), _module(2, structured=False)
    for xs in POINTS:
        a, b = _derivatives(structured, name, xs), _derivatives(lowered, name, xs)
        assert a[0] == pytest.approx(b[0], rel=1e-12, abs=1e-14)
        assert a[1] == pytest.approx(b[1], rel=1e-12, abs=1e-14)


def test_inactive_loop_has_no_reverse_loop():
    from zymase.ir import parse_mlir, print_mlir, scf
    from zymase.transforms.enzyme_pass import run_enzyme_pass

    module = parse_mlir(FUNCS + drivers("inactive_loop", 2))
    run_enzyme_pass(module)
    diffe = next(op for op in module.body.block.ops if getattr(op, "sym_name", None) and op.sym_name.data == "diffeinactive_loop")
    loops = [op for op in diffe.walk() if isinstance(op, scf.ForOp)]
    assert len(loops) == 1, print_mlir(diffe)  # the primal loop only
    assert "enzyme.push" not in print_mlir(diffe)


def test_compile_promotes_the_adjoint_cells():
    """The derivatives checked above are the promoted ones: zymase.mlir.compile's
    differentiation stage leaves no !enzyme.Gradient cell in the reverse functions
    (their adjoints crossing scf regions travel as iter_args and scf.if results),
    while the generator emits cells for several of them."""
    from zymase.frontends.mlir import differentiate
    from zymase.ir import enzyme, parse_mlir
    from zymase.transforms.enzyme_pass import run_enzyme_pass

    def cells(module):
        return [op for op in module.walk() if isinstance(op, (enzyme.GetOp, enzyme.SetOp))
                or (isinstance(op, enzyme.InitOp) and isinstance(op.result.type, enzyme.GradientType))]

    generated = parse_mlir(TEXT)
    run_enzyme_pass(generated)
    assert len(cells(generated)) > 10
    compiled = parse_mlir(TEXT)
    differentiate(compiled)
    assert cells(compiled) == []


def test_memref_carried_through_iter_args_is_an_error():
    text = """
func.func @f(%a: memref<3xf64>, %b: memref<3xf64>) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %m = scf.for %i = %c0 to %c2 step %c1 iter_args(%p = %a) -> (memref<3xf64>) {
    scf.yield %b : memref<3xf64>
  }
  %x = memref.load %m[%c0] : memref<3xf64>
  %y = arith.mulf %x, %x : f64
  func.return %y : f64
}
func.func @df(%a: memref<3xf64>, %da: memref<3xf64>, %b: memref<3xf64>, %db: memref<3xf64>) {
  %one = arith.constant 1.0 : f64
  enzyme.autodiff @f(%a, %da, %b, %db, %one) {activity = [#enzyme<activity enzyme_dup>, #enzyme<activity enzyme_dup>], ret_activity = [#enzyme<activity enzyme_activenoneed>]} : (memref<3xf64>, memref<3xf64>, memref<3xf64>, memref<3xf64>, f64) -> ()
  func.return
}
"""
    with pytest.raises(ZymaseError) as info:
        zymase.mlir.compile(text)
    msg = info.value.format()
    assert msg.startswith("zymase: error: ") and "\n" not in msg
    assert "'scf.for'" in msg and "function 'f'" in msg and "hint:" in msg


MIXED = """
func.func @mixed(%x: f64, %y: f64) -> f64 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c = arith.cmpf ogt, %x, %y : f64
  cf.cond_br %c, ^loop, ^other
^loop:
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%a = %x) -> (f64) {
    %m = arith.mulf %a, %y : f64
    %s = math.sin %m : f64
    scf.yield %s : f64
  }
  cf.br ^done(%r : f64)
^other:
  cf.br ^done(%y : f64)
^done(%v: f64):
  %o = arith.mulf %v, %x : f64
  func.return %o : f64
}
"""


def test_function_mixing_cf_and_scf_falls_back_to_branches():
    m = zymase.mlir.compile(MIXED + drivers("mixed", 2))
    for xs in [(0.9, 0.4), (0.2, 0.7)]:
        rev, fwd = _derivatives(m, "mixed", xs)
        fd = [central_fd(m.mixed, xs, i) for i in range(2)]
        assert rev == pytest.approx(fd, rel=1e-6) and fwd == pytest.approx(fd, rel=1e-6)
