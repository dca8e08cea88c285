"""LLVM's own share of ``zymase cc -O2`` against ``clang -O2`` of the same file (issue 29
item 2: can the whole build come within 3x clang's?).

For each bench workload, one build (``frontends/c.build``, no cache) in this process records
the modules LLVM works on: the input of the pre-AD pipeline (``toolchain.preopt``), clang's
IR that the ``primal`` phase hands to clang's own pipeline (``llvm/clang_primal``), the module
entering the post-AD pipeline (``toolchain.optimize``) and the one entering code generation
(``toolchain.emit_object``). Then, round after round (alternating, so the load of a shared
machine falls on all alike), it times each step again on its recorded input, with nothing
of zymase's Python around it:

  clang      clang -O2 -c of the source (front end, pipeline, code generation: the yardstick)
  preopt     llvmlite's LLVM: parse, pre-AD pipeline, print
  primal     clang -O2 -x ir -S -emit-llvm on clang's IR (the child process of the build)
  optimize   llvmlite's LLVM: parse, post-AD pipeline, print
  codegen    llvmlite's LLVM: parse, object file

and prints the median CPU time of each (the children's for the clang runs), their sum
("LLVM alone") and its ratio to clang's build. A whole build within 3x clang needs LLVM
alone well below 3x (zymase's front end, reader, AD and writer come on top).

It also prints where the derivative IR comes from: the instructions of the differentiated
functions after ``preopt`` (the primal AD reads) against those of their derivatives in the
module entering ``optimize``, by kind of instruction, as written and after the clean-up
LLVM's pipeline starts with (SROA, InstCombine, CFG simplification): the size its later,
expensive passes work on.

Run from the repository root:

  python bench/llvm_share.py --rounds 3
  python bench/llvm_share.py --only hand gmm --rounds 5
"""

from __future__ import annotations

import argparse
import collections
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
WORKLOADS = ROOT / "src" / "zymase" / "bench" / "workloads"
NAMES = ("hand", "gmm", "ba", "lstm", "fft", "ode")

#: ``define ... @name(`` and the instruction opcode of a line inside a body
_DEFINE = re.compile(r"^define [^@]*@([-\w$.]+)\(")
_OPCODE = re.compile(r"^\s+(?:%[-\w$.]+ = )?(?:tail |musttail |notail )?(\w+)")
#: opcode -> kind, for the breakdown of the derivative IR
_KINDS = {
    "load": "memory", "store": "memory", "getelementptr": "address", "alloca": "memory",
    "phi": "control", "br": "control", "switch": "control", "ret": "control", "select": "control",
    "unreachable": "control", "call": "call",
}
for _op in ("fadd", "fsub", "fmul", "fdiv", "fneg", "frem", "fcmp", "fpext", "fptrunc", "sitofp", "uitofp"):
    _KINDS[_op] = "float"
for _op in ("add", "sub", "mul", "shl", "lshr", "ashr", "and", "or", "xor", "icmp", "sext", "zext", "trunc",
            "udiv", "sdiv", "urem", "srem", "ptrtoint", "inttoptr"):
    _KINDS[_op] = "integer"


def _cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _clang() -> str:
    for name in ("clang-19", "clang"):
        if shutil.which(name):
            return name
    sys.exit("no clang-19 or clang on PATH")


def bodies(text: str) -> dict[str, list[str]]:
    """The opcodes of each function defined in ``text``."""
    out: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.split("\n"):
        m = _DEFINE.match(line)
        if m:
            current = out.setdefault(m.group(1), [])
        elif line.startswith("}"):
            current = None
        elif current is not None and (op := _OPCODE.match(line)):
            current.append(op.group(1))
    return out


def record(source: Path, clang_flags: list[str] | None = None) -> dict[str, object]:
    """The inputs of each LLVM step of one build of ``source`` (see the module doc), with
    ``clang_flags`` (none by default)."""
    from zymase.frontends import c
    from zymase.llvm import clang_primal, toolchain

    seen: dict[str, object] = {}
    preopt, optimize, emit = toolchain.preopt, toolchain.optimize, toolchain.emit_object
    pipeline_init = clang_primal.ClangPipeline.__init__

    def keep(name, fn):
        def wrapped(text, *args, **kwargs):
            seen.setdefault(name, text)
            return fn(text, *args, **kwargs)
        return wrapped

    def clang_child(self, clang_ir, clang_flags, level):
        seen["primal"] = (clang_ir, clang_primal.pipeline_flags(clang_flags))
        return pipeline_init(self, clang_ir, clang_flags, level)

    toolchain.preopt, toolchain.optimize = keep("preopt", preopt), keep("optimize", optimize)
    toolchain.emit_object = keep("codegen", emit)
    clang_primal.ClangPipeline.__init__ = clang_child
    try:
        with tempfile.TemporaryDirectory() as tmp:
            c.build([str(source)], str(Path(tmp) / "out.o"), list(clang_flags or []), [], 2, c.Timings(), compile_only=True, cache=False)
    finally:
        toolchain.preopt, toolchain.optimize, toolchain.emit_object = preopt, optimize, emit
        clang_primal.ClangPipeline.__init__ = pipeline_init
    return seen


def time_steps(source: Path, seen: dict[str, object], clang: str, work: Path) -> dict[str, float]:
    """CPU seconds of each step on its recorded input, once."""
    from zymase.llvm import toolchain

    out: dict[str, float] = {}

    def child(argv: list[str]) -> float:
        c0 = _cpu_children()
        subprocess.run(argv, check=True, capture_output=True)
        return _cpu_children() - c0

    def here(fn, *args) -> float:
        t0 = time.process_time()
        fn(*args)
        return time.process_time() - t0

    out["clang"] = child([clang, "-O2", "-c", str(source), "-o", str(work / "clang.o")])
    out["preopt"] = here(toolchain.preopt, seen["preopt"], 2)
    if "primal" in seen:
        clang_ir, flags = seen["primal"]
        (work / "in.ll").write_text(clang_ir)
        out["primal"] = child([clang, "-O2", *flags, "-S", "-emit-llvm", "-o", str(work / "primal.ll"),
                               "-x", "ir", str(work / "in.ll")])
    out["optimize"] = here(toolchain.optimize, seen["optimize"], 2)
    out["codegen"] = here(toolchain.emit_object, seen["codegen"], str(work / "zymase.o"), 2)
    return out


#: the first clean-up of LLVM's function pipeline: what its later passes work on
_CLEANUP = ["sroa", "instruction_combine", "simplify_cfg", "sroa"]


def breakdown(seen: dict[str, object]) -> str:
    """The differentiated functions' instructions after preopt against their derivatives'
    before optimize, by kind: as zymase wrote them, and after SROA, InstCombine and CFG
    simplification (``_CLEANUP``), which LLVM's pipeline runs first. The second is the
    size its expensive passes see: entry-block slots cost nothing there (SROA removes
    them first: 2-3% of ``optimize``), while what InstCombine expands (a store
    of a whole aggregate becomes one store per scalar field) counts in full."""
    from zymase.llvm import toolchain

    primal = bodies(seen["preopt_out"])
    derived = bodies(seen["optimize"])
    cleaned = bodies(toolchain._run_passes(seen["optimize"], _CLEANUP))
    lines = []
    for name, ops in derived.items():
        if not name.startswith("diffe"):
            continue
        base = name[len("diffe"):]
        ref = primal.get(base, [])
        ref_kinds = collections.Counter(_KINDS.get(o, "other") for o in ref)
        for label, body in (("as written", ops), ("after SROA/InstCombine", cleaned.get(name, []))):
            kinds = collections.Counter(_KINDS.get(o, "other") for o in body)
            per = "  ".join(f"{k} {kinds[k]}/{ref_kinds[k]}" for k in
                            ("float", "memory", "address", "integer", "control", "call", "other"))
            lines.append(f"    {name} {label}: {len(body)} instructions, primal {base} {len(ref)} "
                         f"({len(body) / max(len(ref), 1):.1f}x); derivative/primal by kind: {per}")
    total_in, total_opt = sum(map(len, derived.values())), sum(map(len, bodies(seen["codegen"]).values()))
    lines.append(f"    module entering optimize {total_in} instructions, entering codegen {total_opt}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", nargs="*", choices=NAMES, help="workloads (default: all six)")
    ns = p.parse_args()
    from zymase.collect_rarely import collecting_garbage_rarely
    from zymase.llvm import toolchain

    clang = _clang()
    names = ns.only or list(NAMES)
    with tempfile.TemporaryDirectory(prefix="zymase-llvm-share-") as tmp, collecting_garbage_rarely():
        work = Path(tmp)
        recorded = {}
        for name in names:
            seen = record(WORKLOADS / f"{name}.c")
            seen["preopt_out"] = toolchain.preopt(seen["preopt"], 2)
            recorded[name] = seen
            time_steps(WORKLOADS / f"{name}.c", seen, clang, work)  # warm-up
        samples: dict[str, dict[str, list[float]]] = {n: collections.defaultdict(list) for n in names}
        for _ in range(ns.rounds):
            for name in names:
                for step, cpu in time_steps(WORKLOADS / f"{name}.c", recorded[name], clang, work).items():
                    samples[name][step].append(cpu)
        print(f"{ns.rounds} rounds, median CPU seconds")
        for name in names:
            med = {k: statistics.median(v) for k, v in samples[name].items()}
            llvm_alone = sum(v for k, v in med.items() if k != "clang")
            steps = "  ".join(f"{k} {v:.3f}" for k, v in med.items() if k != "clang")
            print(f"\n== {name}: clang -O2 -c {med['clang']:.3f} s; LLVM alone {llvm_alone:.3f} s "
                  f"= {llvm_alone / med['clang']:.2f}x clang ({steps})")
            print(breakdown(recorded[name]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
