"""analysis/sparsity.py on hand-written LLVM IR (issue 25 item 4, the sparsity pattern
of sparse Hessians and Jacobians): first- and second-order index sets through a loop,
memory of the function's own and a libm call; what it cannot follow raises Unknown."""

import numpy as np
import pytest

from zymase.analysis import sparsity as sp
from zymase.llvm import toolchain

# s = sum_i exp(x[i]) * x[i+1] + t[i], with t a stack array holding 2 x[i]
LOOP = """
declare double @llvm.exp.f64(double)
define double @f(ptr %x, i64 %n) {
entry:
  %t = alloca [16 x double]
  %m = sub i64 %n, 1
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %s = phi double [ 0.0, %entry ], [ %s1, %loop ]
  %p = getelementptr double, ptr %x, i64 %i
  %a = load double, ptr %p
  %q = getelementptr inbounds double, ptr %p, i64 1
  %b = load double, ptr %q
  %tp = getelementptr [16 x double], ptr %t, i64 0, i64 %i
  %two = fmul double %a, 2.0
  store double %two, ptr %tp
  %tv = load double, ptr %tp
  %e = call double @llvm.exp.f64(double %a)
  %eb = fmul double %e, %b
  %term = fadd double %eb, %tv
  %s1 = fadd double %s, %term
  %i1 = add i64 %i, 1
  %more = icmp slt i64 %i1, %m
  br i1 %more, label %loop, label %done
done:
  ret double %s1
}
"""


def _run(text, args):
    module = toolchain.parse_module(toolchain._run_passes(text, ["instruction_namer"]))
    return sp.Analysis(module.get_function("f")).run(args)


def _x(n):
    return sp._Ptr(sp._Buffer("x", array=np.linspace(0.1, 1.0, n), input_array=True), 0)


def test_index_sets_through_a_loop_memory_and_libm():
    module = toolchain.parse_module(toolchain._run_passes(LOOP, ["instruction_namer"]))
    interp = sp._Interpreter(module.get_function("f"), 10_000)
    s = interp.run([_x(5), 5])
    assert sp.indices(s.d1) == {0, 1, 2, 3, 4}
    # exp(x_i) x_{i+1}: (i, i) from exp, (i, i+1) from the product; 2 x_i is linear
    want = {(i, i) for i in range(4)} | {(i, i + 1) for i in range(4)} | {(i + 1, i) for i in range(4)}
    assert sp.pairs(s.d2) == want
    assert not interp.value_dependent  # the path depends on n only
    x = np.linspace(0.1, 1.0, 5)
    assert s.v == pytest.approx(sum(np.exp(x[i]) * x[i + 1] + 2 * x[i] for i in range(4)))


@pytest.mark.parametrize("body, why", [
    ("%k = ptrtoint ptr %x to i64\n  %r = sitofp i64 %k to double\n  ret double %r", "'ptrtoint'"),
    ("%k = udiv i64 %n, 0\n  %r = sitofp i64 %k to double\n  ret double %r", "undefined behaviour"),
    ("store double 1.0, ptr %x\n  ret double 0.0", "a store into an argument"),
    ("%r = call double @g(double 1.0)\n  ret double %r", "a call the sparsity analysis does not know"),
    ("store double 1.0, ptr @glob\n  ret double 0.0", "a store into a global"),
])
def test_what_the_analysis_cannot_follow_raises_unknown(body, why):
    text = ("@glob = global double 0.0\ndeclare double @g(double)\n"
            f"define double @f(ptr %x, i64 %n) {{\nentry:\n  {body}\n}}\n")
    with pytest.raises(sp.Unknown) as info:
        _run(text, [_x(3), 3])
    assert why in str(info.value)
