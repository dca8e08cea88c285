"""Special functions that derivative rules need and libm lacks, defined in the module
being differentiated (llvm dialect, or func/arith/math for memref programs) on first use.

``digamma`` is the derivative of ``lgamma`` (and ``tgamma' = tgamma * digamma``). For
x < 0 it reflects, psi(x) = psi(1 - x) - pi / tan(pi x); for x > 0 it steps up with
psi(x) = psi(x + 1) - 1/x until x >= 10, then sums the asymptotic series
psi(x) ~ log x - 1/(2x) - 1/(12x^2) + 1/(120x^4) - 1/(252x^6) + 1/(240x^8) - 1/(132x^10)
+ 691/(32760x^12), whose next term is below 1e-15 there. Poles (0, -1, -2, ...) give infinities or NaN, as
libm's lgamma does.
"""

from __future__ import annotations

from zymase.ir import ModuleOp

DIGAMMA = "__zymase_digamma"

_DIGAMMA_TEXT = f"""
builtin.module {{
  llvm.func @log(f64) -> f64
  llvm.func @tan(f64) -> f64
  llvm.func internal @{DIGAMMA}(%x: f64) -> f64 {{
    %zero = llvm.mlir.constant(0.0 : f64) : f64
    %one = llvm.mlir.constant(1.0 : f64) : f64
    %negative = llvm.fcmp "olt" %x, %zero : f64
    llvm.cond_br %negative, ^reflect, ^climb(%x, %zero : f64, f64)
  ^reflect:
    %pi = llvm.mlir.constant(3.141592653589793 : f64) : f64
    %mirror = llvm.fsub %one, %x : f64
    %psi = llvm.call @{DIGAMMA}(%mirror) : (f64) -> f64
    %pix = llvm.fmul %pi, %x : f64
    %tan = llvm.call @tan(%pix) : (f64) -> f64
    %cot = llvm.fdiv %pi, %tan : f64
    %reflected = llvm.fsub %psi, %cot : f64
    llvm.return %reflected : f64
  ^climb(%v: f64, %acc: f64):
    %ten = llvm.mlir.constant(10.0 : f64) : f64
    %small = llvm.fcmp "olt" %v, %ten : f64
    llvm.cond_br %small, ^step, ^series
  ^step:
    %inv = llvm.fdiv %one, %v : f64
    %acc2 = llvm.fsub %acc, %inv : f64
    %v2 = llvm.fadd %v, %one : f64
    llvm.br ^climb(%v2, %acc2 : f64, f64)
  ^series:
    %half = llvm.mlir.constant(0.5 : f64) : f64
    %c2 = llvm.mlir.constant(-0.08333333333333333 : f64) : f64
    %c4 = llvm.mlir.constant(0.008333333333333333 : f64) : f64
    %c6 = llvm.mlir.constant(-0.003968253968253968 : f64) : f64
    %c8 = llvm.mlir.constant(0.004166666666666667 : f64) : f64
    %c10 = llvm.mlir.constant(-0.007575757575757576 : f64) : f64
    %c12 = llvm.mlir.constant(0.021092796092796094 : f64) : f64
    %rv = llvm.fdiv %one, %v : f64
    %f = llvm.fmul %rv, %rv : f64
    %p12 = llvm.fmul %f, %c12 : f64
    %p10 = llvm.fadd %p12, %c10 : f64
    %q10 = llvm.fmul %f, %p10 : f64
    %p8 = llvm.fadd %q10, %c8 : f64
    %q8 = llvm.fmul %f, %p8 : f64
    %p6 = llvm.fadd %q8, %c6 : f64
    %q6 = llvm.fmul %f, %p6 : f64
    %p4 = llvm.fadd %q6, %c4 : f64
    %q4 = llvm.fmul %f, %p4 : f64
    %p2 = llvm.fadd %q4, %c2 : f64
    %tail = llvm.fmul %f, %p2 : f64
    %lg = llvm.call @log(%v) : (f64) -> f64
    %hv = llvm.fmul %half, %rv : f64
    %s1 = llvm.fsub %lg, %hv : f64
    %s2 = llvm.fadd %s1, %tail : f64
    %psi_v = llvm.fadd %s2, %acc : f64
    llvm.return %psi_v : f64
  }}
}}
"""

# the same function for modules in func/arith/math/cf (memref programs)
_DIGAMMA_FUNC_TEXT = f"""
builtin.module {{
  func.func private @{DIGAMMA}(%x: f64) -> f64 {{
    %zero = arith.constant 0.0 : f64
    %one = arith.constant 1.0 : f64
    %negative = arith.cmpf olt, %x, %zero : f64
    cf.cond_br %negative, ^reflect, ^climb(%x, %zero : f64, f64)
  ^reflect:
    %pi = arith.constant 3.141592653589793 : f64
    %mirror = arith.subf %one, %x : f64
    %psi = func.call @{DIGAMMA}(%mirror) : (f64) -> f64
    %pix = arith.mulf %pi, %x : f64
    %tan = math.tan %pix : f64
    %cot = arith.divf %pi, %tan : f64
    %reflected = arith.subf %psi, %cot : f64
    func.return %reflected : f64
  ^climb(%v: f64, %acc: f64):
    %ten = arith.constant 10.0 : f64
    %small = arith.cmpf olt, %v, %ten : f64
    cf.cond_br %small, ^step, ^series
  ^step:
    %inv = arith.divf %one, %v : f64
    %acc2 = arith.subf %acc, %inv : f64
    %v2 = arith.addf %v, %one : f64
    cf.br ^climb(%v2, %acc2 : f64, f64)
  ^series:
    %half = arith.constant 0.5 : f64
    %c2 = arith.constant -0.08333333333333333 : f64
    %c4 = arith.constant 0.008333333333333333 : f64
    %c6 = arith.constant -0.003968253968253968 : f64
    %c8 = arith.constant 0.004166666666666667 : f64
    %c10 = arith.constant -0.007575757575757576 : f64
    %c12 = arith.constant 0.021092796092796094 : f64
    %rv = arith.divf %one, %v : f64
    %f = arith.mulf %rv, %rv : f64
    %p12 = arith.mulf %f, %c12 : f64
    %p10 = arith.addf %p12, %c10 : f64
    %q10 = arith.mulf %f, %p10 : f64
    %p8 = arith.addf %q10, %c8 : f64
    %q8 = arith.mulf %f, %p8 : f64
    %p6 = arith.addf %q8, %c6 : f64
    %q6 = arith.mulf %f, %p6 : f64
    %p4 = arith.addf %q6, %c4 : f64
    %q4 = arith.mulf %f, %p4 : f64
    %p2 = arith.addf %q4, %c2 : f64
    %tail = arith.mulf %f, %p2 : f64
    %lg = math.log %v : f64
    %hv = arith.mulf %half, %rv : f64
    %s1 = arith.subf %lg, %hv : f64
    %s2 = arith.addf %s1, %tail : f64
    %psi_v = arith.addf %s2, %acc : f64
    func.return %psi_v : f64
  }}
}}
"""


def ensure_digamma(module: ModuleOp, dialect: str = "llvm") -> str:
    """Define ``__zymase_digamma(f64) -> f64`` in ``module`` once (and declare the libm
    functions it calls where the module lacks them); returns its name. ``dialect``:
    "llvm" (an llvm.func) or "func" (a func.func in arith/math/cf)."""
    present = {op.sym_name.data for op in module.body.block.ops if hasattr(op, "sym_name")}
    if DIGAMMA in present:
        return DIGAMMA
    from zymase.cache import parsed_mlir

    text = _DIGAMMA_TEXT if dialect == "llvm" else _DIGAMMA_FUNC_TEXT
    helper = parsed_mlir(text, f"<zymase digamma, {dialect}>")
    for op in list(helper.body.block.ops):
        if op.sym_name.data in present:
            continue
        op.detach()
        module.body.block.add_op(op)
    return DIGAMMA
