"""A plug-in dialect, defined here in IRDL, made differentiable by registering rules
in this file only (the Enzyme-MLIR interfaces: per op forward/reverse, per type
shadow/zero/add). The engine knows nothing about ``toy``.

``toy`` has two scalar ops on f64 (``cube`` = x^3, ``smoothstep`` = 3x^2 - 2x^3)
and a float-like type ``!toy.real`` with ``wrap``/``unwrap`` (to and from f64),
``mul``, ``add`` and ``zero``. Its type rule makes the engine accumulate adjoints
of ``!toy.real`` values with ``toy.add`` and build their zeros with ``toy.zero``.

To run the derivatives, the test lowers ``toy`` to ``arith`` after the enzyme pass
(``!toy.real`` becomes f64) and compiles the result; every derivative is checked
against closed forms and central finite differences.
"""

from __future__ import annotations

import pytest

import zymase.mlir
from zymase.autodiff.registry import REGISTRY, Rule, ScalarRule
from zymase.autodiff.type_rules import TypeRule, register_type
from zymase.errors import ZymaseError
from zymase.ir import (
    FloatAttr,
    FunctionType,
    Rewriter,
    arith,
    dialect_from_irdl,
    f64,
    func,
    parse_mlir,
    print_mlir,
    register_dialect,
)
from zymase.transforms.pipeline import run_passes

TOY_IRDL = """
irdl.dialect @toy {
  irdl.type @real {
    irdl.parameters()
  }
  irdl.operation @cube {
    %f = irdl.is f64
    irdl.operands(x: %f)
    irdl.results(y: %f)
  }
  irdl.operation @smoothstep {
    %f = irdl.is f64
    irdl.operands(x: %f)
    irdl.results(y: %f)
  }
  irdl.operation @floor {
    %f = irdl.is f64
    irdl.operands(x: %f)
    irdl.results(y: %f)
  }
  irdl.operation @wrap {
    %f = irdl.is f64
    %r = irdl.parametric @real<>
    irdl.operands(x: %f)
    irdl.results(y: %r)
  }
  irdl.operation @unwrap {
    %f = irdl.is f64
    %r = irdl.parametric @real<>
    irdl.operands(x: %r)
    irdl.results(y: %f)
  }
  irdl.operation @mul {
    %r = irdl.parametric @real<>
    irdl.operands(a: %r, b: %r)
    irdl.results(y: %r)
  }
  irdl.operation @add {
    %r = irdl.parametric @real<>
    irdl.operands(a: %r, b: %r)
    irdl.results(y: %r)
  }
  irdl.operation @zero {
    %r = irdl.parametric @real<>
    irdl.results(y: %r)
  }
}
"""

# The dialect, its op classes and its type, set by _define_toy when the first test of this
# file runs: defining a dialect from IRDL costs about 0.6 s, which a test worker that runs
# none of these tests would otherwise pay at collection.
TOY = OPS = REAL_CLASS = REAL = None


def _op(name, *operands, typ=None):
    """An unverified toy op whose result type is ``typ`` (default: the first operand's)."""
    rt = typ if typ is not None else operands[0].type
    return OPS[name].create(operands=list(operands), result_types=[rt])


def _emit(E, name, *operands, typ=None):
    return E.v(_op(name, *operands, typ=typ))


# ---------------------------------------------------------------- the rules (all of them)


class _Convert(Rule):
    """wrap/unwrap are linear and change the type: the adjoint goes back through the
    inverse conversion, the tangent forward through the op itself."""

    def __init__(self, name: str, inverse: str, result_type):
        self.name, self.inverse, self.result_type = name, inverse, result_type

    def propagates(self, op, index):
        return True

    def reverse(self, ctx, op, dys):
        dy = dys[0]
        if dy is None or not ctx.wants(op.operands[0]):
            return [None]
        back = f64 if self.result_type == REAL else REAL
        return [_emit(ctx.E, self.inverse, dy, typ=back)]

    def forward(self, ctx, op, tangents):
        t = tangents[0]
        return [None if t is None else _emit(ctx.E, self.name, t, typ=self.result_type)]


def _three(E, dy):
    return E.const_like(3.0, dy)


def _define_toy() -> None:
    """Define and register ``toy`` and its rules, once per process."""
    global TOY, OPS, REAL_CLASS, REAL
    if TOY is not None:
        return
    TOY = dialect_from_irdl(TOY_IRDL)
    OPS = {cls.name.split(".", 1)[1]: cls for cls in TOY.operations}
    REAL_CLASS = next(iter(TOY.attributes))
    REAL = REAL_CLASS.new(())
    register_dialect(TOY)
    REGISTRY.register(
        OPS["cube"], ScalarRule(lambda E, P, dy: E.mul(dy, E.mul(_three(E, dy), E.square(P.arg(0)))))
    )
    # smoothstep'(x) = 6x(1 - x)
    REGISTRY.register(
        OPS["smoothstep"],
        ScalarRule(
            lambda E, P, dy: E.mul(
                dy, E.mul(E.mul(E.const_like(6.0, dy), P.arg(0)), E.sub(E.const_like(1.0, dy), P.arg(0)))
            )
        ),
    )
    REGISTRY.register(OPS["wrap"], _Convert("wrap", "unwrap", REAL))
    REGISTRY.register(OPS["unwrap"], _Convert("unwrap", "wrap", f64))
    REGISTRY.register(
        OPS["mul"],
        ScalarRule(
            lambda E, P, dy: _emit(E, "mul", dy, P.arg(1)),
            lambda E, P, dy: _emit(E, "mul", P.arg(0), dy),
        ),
    )
    REGISTRY.register(OPS["add"], ScalarRule(lambda E, P, dy: dy, lambda E, P, dy: dy))
    # toy.floor deliberately has no rule: differentiating through it must be refused.

    register_type(
        REAL_CLASS,
        TypeRule(
            zero=lambda E, t: _emit(E, "zero", typ=t),
            add=lambda E, a, b: _emit(E, "add", a, b),
        ),
    )


@pytest.fixture(autouse=True, scope="module")
def _toy_dialect():
    _define_toy()


# ---------------------------------------------------------------- toy -> arith, for running


def _lowered(t):
    """``t`` with ``!toy.real`` replaced by f64, also inside parameters (the engine's
    adjoint cells are ``!enzyme.Gradient<!toy.real>``)."""
    if t == REAL:
        return f64
    params = getattr(t, "parameters", None)
    if isinstance(params, tuple) and params and not isinstance(t, FunctionType):
        new = tuple(_lowered(p) for p in params)
        if new != params:
            return type(t).new(new)
    return t


def lower_toy(text: str) -> str:
    """``!toy.real`` becomes f64 and each toy op its arith expansion."""
    module = parse_mlir(text)
    ops = list(module.walk())
    for op in ops:
        for block in (b for r in op.regions for b in r.blocks):
            for arg in list(block.args):
                if _lowered(arg.type) != arg.type:
                    Rewriter.replace_value_with_new_type(arg, _lowered(arg.type))
        for res in list(op.results):
            if _lowered(res.type) != res.type:
                Rewriter.replace_value_with_new_type(res, _lowered(res.type))
        if isinstance(op, func.FuncOp):
            ft = op.function_type
            op.function_type = FunctionType.from_lists(
                [_lowered(t) for t in ft.inputs.data], [_lowered(t) for t in ft.outputs.data]
            )
    for op in ops:
        if op.dialect_name() != "toy":
            continue
        name = op.name.split(".", 1)[1]
        x = list(op.operands)
        if name in ("wrap", "unwrap"):
            op.results[0].replace_all_uses_with(x[0])
            op.parent_block().erase_op(op)
            continue
        if name == "zero":
            new = [arith.ConstantOp(FloatAttr(0.0, f64), f64)]
        elif name == "mul":
            new = [arith.MulfOp(x[0], x[1])]
        elif name == "add":
            new = [arith.AddfOp(x[0], x[1])]
        elif name == "cube":
            sq = arith.MulfOp(x[0], x[0])
            new = [sq, arith.MulfOp(sq.result, x[0])]
        elif name == "smoothstep":  # x^2 (3 - 2x)
            sq = arith.MulfOp(x[0], x[0])
            c3 = arith.ConstantOp(FloatAttr(3.0, f64), f64)
            c2 = arith.ConstantOp(FloatAttr(2.0, f64), f64)
            tx = arith.MulfOp(c2.result, x[0])
            d = arith.SubfOp(c3.result, tx.result)
            new = [sq, c3, c2, tx, d, arith.MulfOp(sq.result, d.result)]
        else:
            raise AssertionError(f"no lowering for {op.name}")
        Rewriter.replace_op(op, new, [new[-1].results[0]])
    return print_mlir(module)


def compile_toy(text: str):
    """The zymase pipeline with the plug-in: enzyme pass, then toy -> arith, then
    the rest of ``zymase.mlir.compile`` (lowering to LLVM, JIT)."""
    return zymase.mlir.compile(lower_toy(run_passes(text, "<toy>", ["enzyme"])))


ACTIVE, CONST, DUP, OUT = (
    f"#enzyme<activity enzyme_{a}>" for a in ("active", "const", "dup", "activenoneed")
)

# p(x) iterates a <- smoothstep(a) + 0.1 * cube(a), n times from a = x
ITERATE = f"""
func.func @p(%x: f64, %n: index) -> f64 {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %k = arith.constant 0.1 : f64
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%a = %x) -> (f64) {{
    %s = "toy.smoothstep"(%a) : (f64) -> f64
    %c = "toy.cube"(%a) : (f64) -> f64
    %kc = arith.mulf %k, %c : f64
    %b = arith.addf %s, %kc : f64
    scf.yield %b : f64
  }}
  func.return %r : f64
}}
func.func @dp(%x: f64, %n: index) -> f64 {{
  %one = arith.constant 1.0 : f64
  %d = enzyme.autodiff @p(%x, %n, %one) {{activity = [{ACTIVE}, {CONST}], ret_activity = [{OUT}]}} : (f64, index, f64) -> f64
  func.return %d : f64
}}
func.func @fp(%x: f64, %n: index) -> f64 {{
  %one = arith.constant 1.0 : f64
  %d:2 = enzyme.fwddiff @p(%x, %one, %n) {{activity = [{DUP}, {CONST}], ret_activity = [{DUP}]}} : (f64, f64, index) -> (f64, f64)
  func.return %d#1 : f64
}}
"""


def _p(x: float, n: int) -> tuple[float, float]:
    """The value and derivative of @p by the chain rule, in Python."""
    a, d = x, 1.0
    for _ in range(n):
        d *= 6 * a * (1 - a) + 0.3 * a * a
        a = 3 * a * a - 2 * a**3 + 0.1 * a**3
    return a, d


def test_dialect_ops_differentiate_in_a_loop_both_modes():
    m = compile_toy(ITERATE)
    for x in (0.2, 0.45, 0.7):
        for n in (1, 4):
            _, want = _p(x, n)
            h = 1e-6
            fd = (_p(x + h, n)[0] - _p(x - h, n)[0]) / (2 * h)
            assert want == pytest.approx(fd, rel=1e-6)
            assert m.dp(x, n) == pytest.approx(want, rel=1e-12)
            assert m.fp(x, n) == pytest.approx(want, rel=1e-12)


# g(x, y) = unwrap(wrap(x) * wrap(y) * wrap(x) + wrap(y)) = x^2 y + y; h(r, s) = r * r
REAL_FNS = f"""
func.func @g(%x: f64, %y: f64) -> f64 {{
  %rx = "toy.wrap"(%x) : (f64) -> !toy.real
  %ry = "toy.wrap"(%y) : (f64) -> !toy.real
  %p = "toy.mul"(%rx, %ry) : (!toy.real, !toy.real) -> !toy.real
  %q = "toy.mul"(%p, %rx) : (!toy.real, !toy.real) -> !toy.real
  %s = "toy.add"(%q, %ry) : (!toy.real, !toy.real) -> !toy.real
  %r = "toy.unwrap"(%s) : (!toy.real) -> f64
  func.return %r : f64
}}
func.func @dg(%x: f64, %y: f64) -> (f64, f64) {{
  %one = arith.constant 1.0 : f64
  %d:2 = enzyme.autodiff @g(%x, %y, %one) {{activity = [{ACTIVE}, {ACTIVE}], ret_activity = [{OUT}]}} : (f64, f64, f64) -> (f64, f64)
  func.return %d#0, %d#1 : f64, f64
}}
func.func @fg(%x: f64, %y: f64, %tx: f64, %ty: f64) -> f64 {{
  %d:2 = enzyme.fwddiff @g(%x, %tx, %y, %ty) {{activity = [{DUP}, {DUP}], ret_activity = [{DUP}]}} : (f64, f64, f64, f64) -> (f64, f64)
  func.return %d#1 : f64
}}
func.func @h(%r: !toy.real, %s: !toy.real) -> !toy.real {{
  %y = "toy.mul"(%r, %r) : (!toy.real, !toy.real) -> !toy.real
  func.return %y : !toy.real
}}
func.func @dh(%r: !toy.real, %s: !toy.real, %seed: !toy.real) -> (!toy.real, !toy.real) {{
  %d:2 = enzyme.autodiff @h(%r, %s, %seed) {{activity = [{ACTIVE}, {ACTIVE}], ret_activity = [{OUT}]}} : (!toy.real, !toy.real, !toy.real) -> (!toy.real, !toy.real)
  func.return %d#0, %d#1 : !toy.real, !toy.real
}}
"""


def _g(x, y):
    return x * x * y + y


def test_plugin_type_values_differentiate():
    m = compile_toy(REAL_FNS)
    h = 1e-6
    for x, y in ((0.5, -1.5), (2.0, 3.0)):
        dx, dy = m.dg(x, y)
        fdx = (_g(x + h, y) - _g(x - h, y)) / (2 * h)
        fdy = (_g(x, y + h) - _g(x, y - h)) / (2 * h)
        assert (dx, dy) == pytest.approx((2 * x * y, x * x + 1), rel=1e-12)
        assert (dx, dy) == pytest.approx((fdx, fdy), rel=1e-6)
        assert m.fg(x, y, 0.25, -2.0) == pytest.approx(0.25 * 2 * x * y - 2.0 * (x * x + 1), rel=1e-12)
    # !toy.real at the boundary (shadow type = the type itself, f64 once lowered)
    assert m.dh(1.5, 7.0, 2.0) == pytest.approx((2 * 1.5 * 2.0, 0.0))


def test_enzyme_pass_output_uses_the_type_rule(filecheck):
    out = run_passes(REAL_FNS, "<toy>", ["enzyme"])
    # The rules' toy.wrap / toy.mul / toy.unwrap appear; adjoints of !toy.real values
    # live in !toy.real cells and are accumulated with toy.add (the type rule); the
    # adjoint of @h's unused %s is the type rule's toy.zero.
    filecheck(
        out,
        """
        CHECK-LABEL: func.func @dg
        CHECK: func.call @[[G:.*]](%x, %y, %one) : (f64, f64, f64) -> (f64, f64)
        CHECK-LABEL: func.func @dh
        CHECK: func.call @[[H:.*]](%r, %s, %seed) : (!toy.real, !toy.real, !toy.real) -> (!toy.real, !toy.real)
        CHECK: func.func private @[[G]](
        CHECK: "toy.wrap"
        CHECK: "toy.mul"
        CHECK: "toy.mul"({{.*}}) : (!toy.real, !toy.real) -> !toy.real
        CHECK: "toy.add"({{.*}}) : (!toy.real, !toy.real) -> !toy.real
        CHECK: "toy.unwrap"({{.*}}) : (!toy.real) -> f64
        CHECK: func.func private @[[H]](
        CHECK: %[[CELL:.*]] = enzyme.init : !enzyme.Gradient<!toy.real>
        CHECK: %[[OLD:.*]] = enzyme.get %[[CELL]] : !enzyme.Gradient<!toy.real> -> !toy.real
        CHECK-NEXT: %[[NEW:.*]] = "toy.add"(%[[OLD]], %{{.*}}) : (!toy.real, !toy.real) -> !toy.real
        CHECK-NEXT: enzyme.set %[[CELL]], %[[NEW]] : !enzyme.Gradient<!toy.real>, !toy.real
        CHECK: %[[Z:.*]] = "toy.zero"() : () -> !toy.real
        CHECK-NEXT: func.return %{{.*}}, %[[Z]] : !toy.real, !toy.real
        """,
    )


def test_op_without_rule_is_refused():
    text = f"""
    func.func @f(%x: f64) -> f64 {{
      %y = "toy.floor"(%x) : (f64) -> f64
      func.return %y : f64
    }}
    func.func @df(%x: f64) -> f64 {{
      %one = arith.constant 1.0 : f64
      %d = enzyme.autodiff @f(%x, %one) {{activity = [{ACTIVE}], ret_activity = [{OUT}]}} : (f64, f64) -> f64
      func.return %d : f64
    }}
    """
    with pytest.raises(ZymaseError, match="no derivative rule for 'toy.floor'") as info:
        run_passes(text, "<toy>", ["enzyme"])
    assert "\n" not in info.value.format()


def test_bad_irdl_is_one_line_error():
    with pytest.raises(ZymaseError, match="cannot parse IRDL") as info:
        dialect_from_irdl("irdl.dialect @bad { irdl.operation @x { %a = irdl.bogus } }")
    assert "\n" not in info.value.format()
