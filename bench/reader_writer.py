"""Speed of zymase's LLVM IR reader and writer on large modules (issue 29, the import and
export phases of ``zymase cc``).

A module of N copies of one loop function (a branch, a phi per join, a call to llvm.sin, a
load of a global) is read into zymase.ir and written back, for each N of ``--functions``,
in alternating rounds; prints per N the lines of IR, the median CPU time of each step and
its time per 1,000 lines. The time per line stays flat from 100 to 700 functions when
both steps are linear in the module (a quadratic step shows as a per-line time that grows
with N). tests/python/test_llvm_reader_writer.py round-trips the same module (untimed).
Run from the repository root:

  python bench/reader_writer.py --functions 100 700 --rounds 3
"""

from __future__ import annotations

import argparse
import statistics
import time


def loop_functions_module(functions: int) -> str:
    """LLVM IR text of ``functions`` functions ``double @fK(ptr %x, i32 %n, double %y)``:
    the sum over i < n of sin(x[i]) * (K + 0.5) where x[i] > y, else x[i] / @g (@g = 1.5)."""
    parts = ["@g = global double 1.5, align 8", "declare double @llvm.sin.f64(double)"]
    for n in range(functions):
        parts.append(f"""
define double @f{n}(ptr %x, i32 %n, double %y) {{
entry:
  %c0 = icmp sgt i32 %n, 0
  br i1 %c0, label %loop, label %exit
loop:
  %i = phi i32 [ 0, %entry ], [ %i1, %latch ]
  %s = phi double [ 0.000000e+00, %entry ], [ %s2, %latch ]
  %idx = zext nneg i32 %i to i64
  %p = getelementptr inbounds double, ptr %x, i64 %idx
  %v = load double, ptr %p, align 8
  %gt = fcmp ogt double %v, %y
  br i1 %gt, label %then, label %else
then:
  %sv = call double @llvm.sin.f64(double %v)
  %t = fmul fast double %sv, {n}.5
  br label %latch
else:
  %g = load double, ptr @g, align 8
  %e = fdiv double %v, %g
  br label %latch
latch:
  %d = phi double [ %t, %then ], [ %e, %else ]
  %s2 = fadd double %s, %d
  %i1 = add nuw nsw i32 %i, 1
  %done = icmp eq i32 %i1, %n
  br i1 %done, label %exit, label %loop
exit:
  %r = phi double [ 0.000000e+00, %entry ], [ %s2, %latch ]
  ret double %r
}}""")
    return "\n".join(parts)


def main() -> None:
    from zymase.llvm.reader import read_llvm_ir
    from zymase.llvm.writer import write_llvm_ir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, nargs="+", default=[100, 700])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = {n: loop_functions_module(n) for n in args.functions}
    times: dict[int, dict[str, list[float]]] = {n: {"read": [], "write": []} for n in args.functions}
    for _ in range(args.rounds):
        for n, text in texts.items():
            start = time.process_time()  # CPU time: less sensitive to other load
            module = read_llvm_ir(text)
            times[n]["read"].append(time.process_time() - start)
            start = time.process_time()
            write_llvm_ir(module)
            times[n]["write"].append(time.process_time() - start)
    print(f"{'functions':>9} {'lines':>7} {'read s':>8} {'ms/kline':>8} {'write s':>8} {'ms/kline':>8}")
    for n, text in texts.items():
        lines = text.count("\n") + 1
        read, write = (statistics.median(times[n][step]) for step in ("read", "write"))
        print(f"{n:>9} {lines:>7} {read:>8.2f} {1e6 * read / lines:>8.1f} {write:>8.2f} {1e6 * write / lines:>8.1f}")


if __name__ == "__main__":
    main()
