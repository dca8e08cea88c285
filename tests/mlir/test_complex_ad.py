"""Issue 28 item 5, the complex dialect: create/re/im/constant/add/sub/mul/div/abs/
exp/log/conj as pairs of floats (transforms/lower_complex.py), also carried by scf.for
and scf.if, differentiated through
``zymase.mlir.compile`` in both modes with Enzyme-MLIR's activities. The compiled
functions take and return Python complex numbers. Convention (Enzyme-MLIR's at a
derivative's boundary): the reverse derivative for complex ``z = a + ib`` is
``dL/da + i dL/db`` with ``L = Re(conj(seed) f)``; the forward one is the
directional derivative along the complex tangent."""

from __future__ import annotations

import cmath

import pytest

import zymase.mlir
from zymase.errors import ZymaseError


def A(name: str) -> str:
    return f"#enzyme<activity enzyme_{name}>"


TEXT = f"""
func.func @f(%z: complex<f64>, %w: complex<f64>) -> complex<f64> {{
  %p = complex.mul %z, %w : complex<f64>
  %e = complex.exp %p : complex<f64>
  %c = complex.conj %z : complex<f64>
  %q = complex.div %e, %c : complex<f64>
  %l = complex.log %w : complex<f64>
  %s = complex.sub %q, %l : complex<f64>
  %k = complex.constant [0.5, -1.5] : complex<f64>
  %r = complex.add %s, %k : complex<f64>
  return %r : complex<f64>
}}
func.func @g(%z: complex<f64>) -> f64 {{
  %a = complex.abs %z : complex<f64>
  %re = complex.re %z : complex<f64>
  %im = complex.im %z : complex<f64>
  %t = arith.mulf %re, %im : f64
  %u = arith.addf %a, %t : f64
  %c = complex.create %u, %re : complex<f64>
  %sq = complex.mul %c, %c : complex<f64>
  %o = complex.im %sq : complex<f64>
  return %o : f64
}}
func.func @rev_f(%z: complex<f64>, %w: complex<f64>, %seed: complex<f64>) -> (complex<f64>, complex<f64>) {{
  %dz, %dw = enzyme.autodiff @f(%z, %w, %seed) {{activity = [{A('active')}, {A('active')}], ret_activity = [{A('activenoneed')}]}} : (complex<f64>, complex<f64>, complex<f64>) -> (complex<f64>, complex<f64>)
  return %dz, %dw : complex<f64>, complex<f64>
}}
func.func @fwd_f(%z: complex<f64>, %dz: complex<f64>, %w: complex<f64>, %dw: complex<f64>) -> (complex<f64>, complex<f64>) {{
  %r, %dr = enzyme.fwddiff @f(%z, %dz, %w, %dw) {{activity = [{A('dup')}, {A('dup')}], ret_activity = [{A('dup')}]}} : (complex<f64>, complex<f64>, complex<f64>, complex<f64>) -> (complex<f64>, complex<f64>)
  return %r, %dr : complex<f64>, complex<f64>
}}
func.func @rev_g(%z: complex<f64>) -> complex<f64> {{
  %one = arith.constant 1.0 : f64
  %dz = enzyme.autodiff @g(%z, %one) {{activity = [{A('active')}], ret_activity = [{A('activenoneed')}]}} : (complex<f64>, f64) -> complex<f64>
  return %dz : complex<f64>
}}

func.func @square(%x: complex<f64>) -> complex<f64> {{
  %r = complex.mul %x, %x : complex<f64>
  return %r : complex<f64>
}}
func.func @dsquare(%x: complex<f64>, %dr: complex<f64>) -> complex<f64> {{
  %d = enzyme.autodiff @square(%x, %dr) {{activity = [{A('active')}], ret_activity = [{A('activenoneed')}]}} : (complex<f64>, complex<f64>) -> complex<f64>
  return %d : complex<f64>
}}
"""


def F(z, w):
    return cmath.exp(z * w) / z.conjugate() - cmath.log(w) + (0.5 - 1.5j)


def G(z):
    return ((complex(abs(z) + z.real * z.imag, z.real)) ** 2).imag


def _real_pair_gradient(L, z, h=1e-6):
    return (L(z + h) - L(z - h)) / (2 * h) + 1j * (L(z + 1j * h) - L(z - 1j * h)) / (2 * h)


_MODULES: dict = {}


def _module(opt_level):
    if opt_level not in _MODULES:
        _MODULES[opt_level] = zymase.mlir.compile(TEXT, opt_level=opt_level)
    return _MODULES[opt_level]


@pytest.mark.parametrize("opt_level", [0, 2])
def test_complex_derivatives_match_finite_differences(opt_level):
    m = _module(opt_level)
    for z, w, seed in [(0.3 + 0.4j, -0.7 + 0.2j, 0.6 - 0.25j), (-1.1 + 0.5j, 0.4 - 0.9j, -0.3 + 1.0j)]:
        assert m.f(z, w) == pytest.approx(F(z, w), rel=1e-13)

        def loss(z, w):
            return (seed.conjugate() * F(z, w)).real

        dz, dw = m.rev_f(z, w, seed)
        assert dz == pytest.approx(_real_pair_gradient(lambda t: loss(t, w), z), rel=1e-6, abs=1e-8)
        assert dw == pytest.approx(_real_pair_gradient(lambda t: loss(z, t), w), rel=1e-6, abs=1e-8)

        tz, tw, h = 0.2 + 0.1j, -0.3 + 0.5j, 1e-6
        r, dr = m.fwd_f(z, tz, w, tw)
        assert r == pytest.approx(F(z, w), rel=1e-13)
        assert dr == pytest.approx((F(z + h * tz, w + h * tw) - F(z - h * tz, w - h * tw)) / (2 * h), rel=1e-6)

        assert m.g(z) == pytest.approx(G(z), rel=1e-13)
        assert m.rev_g(z) == pytest.approx(_real_pair_gradient(G, z), rel=1e-6, abs=1e-8)


def test_complex_square_closed_form():
    """Enzyme-MLIR's csquare: the reverse derivative of x*x with seed dr is 2 dr conj(x)."""
    m = _module(2)
    for x, dr in [(0.3 + 0.4j, 1.0), (-1.5 + 2.0j, 0.25 - 0.75j)]:
        assert m.dsquare(x, dr) == pytest.approx(2 * dr * x.conjugate(), rel=1e-14)


def test_unsupported_complex_op_is_refused():
    text = """
func.func @h(%z: complex<f64>) -> complex<f64> {
  %s = complex.sin %z : complex<f64>
  return %s : complex<f64>
}"""
    with pytest.raises(ZymaseError) as err:
        zymase.mlir.compile(text)
    message = str(err.value)
    assert message.startswith("zymase: error:") and "complex.sin" in message and "'h'" in message
    assert "hint" in message


def test_complex_arguments_are_python_complex_numbers():
    m = _module(0)
    with pytest.raises(ZymaseError, match="expected a complex number"):
        m.g("x")
    assert m.square(1 + 2j) == -3 + 4j



LOOP = """
func.func @c(%z: complex<f64>, %n: index) -> complex<f64> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %w = complex.constant [0.5, 0.25] : complex<f64>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %z) -> (complex<f64>) {
    %re = complex.re %a : complex<f64>
    %zero = arith.constant 0.0 : f64
    %pos = arith.cmpf ogt, %re, %zero : f64
    %b = scf.if %pos -> (complex<f64>) {
      %m = complex.mul %a, %a : complex<f64>
      scf.yield %m : complex<f64>
    } else {
      %e = complex.exp %a : complex<f64>
      scf.yield %e : complex<f64>
    }
    %s = complex.mul %b, %w : complex<f64>
    scf.yield %s : complex<f64>
  }
  return %r : complex<f64>
}
func.func @rc(%z: complex<f64>, %n: index, %seed: complex<f64>) -> complex<f64> {
  %d = enzyme.autodiff @c(%z, %n, %seed) {activity = [ACTIVE, CONST], ret_activity = [ACTIVENONEED]} : (complex<f64>, index, complex<f64>) -> complex<f64>
  return %d : complex<f64>
}
func.func @fc(%z: complex<f64>, %dz: complex<f64>, %n: index) -> complex<f64> {
  %d = enzyme.fwddiff @c(%z, %dz, %n) {activity = [DUP, CONST], ret_activity = [DUPNONEED]} : (complex<f64>, complex<f64>, index) -> complex<f64>
  return %d : complex<f64>
}
"""
for _name in ("ACTIVENONEED", "ACTIVE", "CONST", "DUPNONEED", "DUP"):
    LOOP = LOOP.replace(_name, A(_name.lower()))


def test_complex_values_through_scf_for_and_if():
    """Complex iter_args and scf.if results are split into pairs too; the loop takes
    the exp branch while the real part is not positive."""
    m = zymase.mlir.compile(LOOP)

    def C(z, n):
        a = z
        for _ in range(n):
            a = (a * a if a.real > 0 else cmath.exp(a)) * (0.5 + 0.25j)
        return a

    for z in (0.6 - 0.3j, -0.2 + 0.9j):
        seed, dz = 0.7 + 0.2j, 0.3 - 0.9j
        assert m.c(z, 3) == pytest.approx(C(z, 3), rel=1e-13)
        gradient = _real_pair_gradient(lambda t: (seed.conjugate() * C(t, 3)).real, z)
        assert m.rc(z, 3, seed) == pytest.approx(gradient, rel=1e-6, abs=1e-9)
        h = 1e-6
        assert m.fc(z, dz, 3) == pytest.approx((C(z + h * dz, 3) - C(z - h * dz, 3)) / (2 * h), rel=1e-6, abs=1e-9)


def test_complex_values_in_memory_are_refused():
    text = """
func.func @c(%m: memref<?xcomplex<f64>>, %i: index) -> complex<f64> {
  %v = memref.load %m[%i] : memref<?xcomplex<f64>>
  return %v : complex<f64>
}"""
    with pytest.raises(ZymaseError) as err:
        zymase.mlir.compile(text)
    message = str(err.value)
    assert message.startswith("zymase: error:") and "'memref.load'" in message and "'c'" in message
    assert "complex.re" in message  # the hint
