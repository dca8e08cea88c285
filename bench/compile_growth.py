"""How ``zymase cc``'s compile time grows with the size of the module (issue 29: AD time
per instruction flat within 2x from 1k to 100k instructions).

Generates C modules of about 1,000, 10,000 and 100,000 LLVM instructions (``--sizes``):
straight-line functions, each differentiated by a wrapper of its own, where both the
number of functions and their length grow with the square root of the size (as in
tests/python/test_compile_growth.py, which checks 1k and 10k in the suite by counting
the operations visited; this script times them, and goes to 100k). Each module goes
through the LLVM path of ``zymase cc -O2`` up to the derivative IR
(``frontends/c.differentiate_llvm_ir``: preopt, split, import, AD, export, merge) in
this process, with clang's IR made beforehand, after a small module has loaded the
engine. Prints per size the instructions imported, each phase's CPU time and its time
per instruction (microseconds), and its ratio to that of the smallest size.

  python bench/compile_growth.py                       # 1k, 10k, 100k
  python bench/compile_growth.py --sizes 1000 10000    # quicker
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

#: LLVM instructions per generated statement (clang -O2 before any pass), about
INSTRUCTIONS_PER_STATEMENT = 5


def program(functions: int, statements: int) -> str:
    """``functions`` functions of ``statements`` statements, each differentiated by a
    wrapper of its own."""
    lines = ["#include <math.h>", "extern void __enzyme_autodiff(void *, ...);"]
    for f in range(functions):
        lines.append(f"double f{f}(const double *x) {{\n  double s = x[0];")
        for k in range(statements):
            lines.append(f"  s = s * x[{k % 7}] + sin(x[{(3 * k + f) % 11}] * s + {k + 0.5 * f});")
        lines.append("  return s;\n}")
        lines.append(f"void g{f}(const double *x, double *dx) {{ __enzyme_autodiff((void *)f{f}, x, dx); }}")
    return "\n".join(lines) + "\n"


def shape(size: int) -> tuple[int, int]:
    """(functions, statements per function) for about ``size`` instructions, both
    growing with sqrt(size): 1,000 -> (6, 34), 10,000 -> (20, 100), 100,000 -> (63, 316)."""
    statements_total = size / INSTRUCTIONS_PER_STATEMENT
    functions = max(1, round(math.sqrt(statements_total / 5.6)))
    return functions, max(1, round(statements_total / functions))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000, 100000])
    ns = p.parse_args()
    from zymase.frontends import c as c_frontend
    from zymase.llvm import reader as llvm_reader

    clang = shutil.which("clang-19") or shutil.which("clang")
    if clang is None:
        sys.exit("no clang-19 or clang on PATH")
    instructions = 0
    read = llvm_reader.read_llvm_ir

    def counting_read(text, *args, **kwargs):
        nonlocal instructions
        module = read(text, *args, **kwargs)
        instructions = sum(1 for op in module.walk() if op.parent_op() not in (module, None))
        return module

    llvm_reader.read_llvm_ir = counting_read
    # the phases in CPU time of this process (Timings reads time.perf_counter): on a
    # shared machine wall time measures the neighbours as much as zymase
    c_frontend.time = type("CPUClock", (), {"perf_counter": staticmethod(time.process_time)})
    first = None
    with tempfile.TemporaryDirectory(prefix="zymase-growth-") as tmp:
        for size in [200, *ns.sizes]:  # the first, small, run loads the engine (not reported)
            functions, statements = shape(size)
            source = Path(tmp) / f"grow_{size}.c"
            source.write_text(program(functions, statements))
            ll = subprocess.run([clang, "-O2", "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", "-o", "-",
                                 str(source)], capture_output=True, text=True, check=True).stdout
            timings = c_frontend.Timings()
            cpu = time.process_time()
            c_frontend.differentiate_llvm_ir(ll, source.name, 2, timings, only_reachable=True)
            cpu = time.process_time() - cpu
            phases = timings.phases
            per = {k: v / instructions * 1e6 for k, v in phases.items()}
            if size == 200:
                continue
            if first is None:
                first = per
            print(f"\n== {size} ({functions} functions x {statements} statements): {instructions} instructions "
                  f"imported, {cpu:.1f} s CPU in all")
            for phase, seconds in phases.items():
                print(f"  {phase:<8} {seconds:8.2f} s  {per[phase]:8.1f} us/instruction  "
                      f"{per[phase] / first[phase]:5.2f}x the smallest size's")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
