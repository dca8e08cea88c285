"""zymase's gradients against Enzyme's own, in absolute time (issue 29's normalization target).

Enzyme has no build on these machines, but PyPI's Enzyme-JAX (``enzyme-ad``, an optional
bench dependency, not a CI one) embeds a clang and Enzyme's LLVM passes: its ``cpp_call``
compiles C++ source in-process (clang front end, then LLVM's ``default<O3>`` pipeline with
Enzyme's pass in it, as Enzyme's clang plugin places it) and JIT-compiles the result. User
source given to it may call ``__enzyme_autodiff`` itself, and Enzyme differentiates that
call. So each program in ``bench/vs_enzyme/`` (C that also compiles as C++) is built four
ways around one timing harness (``vs_harness.h``), which times every primal and gradient
call with ``clock_gettime`` inside the compiled code (no process start-up, no XLA dispatch):

  zymase        ``zymase cc -O2 -fno-math-errno -march=<cpu>`` (gradient and primal)
  clang         ``clang-19 -O2 -fno-math-errno -march=<cpu>``, the marker call going to an
                opaque stub in another object file (the primal alone; as primal_parity.py)
  enzyme        Enzyme-JAX's pipeline (gradient and primal)
  enzyme-clang  Enzyme-JAX's pipeline with the marker stubbed in a shared library (the
                primal alone: what its clang and O3 make of the primal without AD)
  zymase-llvm24 (``--toolchain``) zymase cc's final derivative IR (``-S -emit-llvm``: no
                ``__enzyme_`` call left, nothing for Enzyme to do) through Enzyme-JAX's LLVM-IR
                door: LLVM 24's ``default<O3>`` and code generation on zymase's derivative, which
                separates the toolchain (LLVM 22 against 24) from the AD

Every build's arrays come from the harness (``vs_alloc``: page-aligned, array k at
``--stagger`` x k bytes into its page), so the layout is the same in every build: left to each
build's allocator and caller, it moved the normalization gradient by up to 6%.

Rounds alternate the four (the two Enzyme kernels in this process, the two executables in
child processes); each measurement is the median per-call time over ``reps`` calls; the
report gives per build the median over rounds (and the best), and the ratios zymase /
enzyme. Every build's gradient is checked against central differences of the objective the
harness returns (and, for the normalization, against its closed form), and the zymase and
Enzyme gradients against each other.

Enzyme-JAX's front end is clang's ``cc1`` driven directly: no driver defaults. The script
passes what ``clang -O2 -march=<cpu>`` would set that matters here: ``-target-cpu <cpu>``
(the host CPU clang-19's ``-march=native`` picks), ``-ffp-contract=on`` (the C/C++
driver's default; cc1 alone emits no FMA contraction), ``-funroll-loops`` (the driver's
default from -O2; Enzyme-JAX appends ``-O1`` to the front end's flags, which alone would
mark every loop "do not unroll"), ``-fgnuc-version=4.2.1`` (glibc's C++ headers need it) and
clang-19's builtin headers (the wheel ships none). cc1 never sets errno on math calls: that
is ``-fno-math-errno``. Enzyme-JAX also turns on Enzyme's ``enzyme-always-inline`` option,
which makes derivatives of a ``noinline`` function invalid IR (LLVM's verifier aborts:
"Attributes 'noinline and alwaysinline' are incompatible!"); the script sets it back to
Enzyme's own default (off, as in Enzyme's clang plugin) through the only door the wheel
leaves open, its XLA's ``--xla_backend_extra_options``, read once when its XLA first
compiles. ``--fp-contract off`` builds every side without contraction instead.

Run from the repository root (enzyme-ad 0.0.16 needs Python 3.11 and jax >= 0.8):

  pip install enzyme-ad==0.0.16   # or: pip install --no-deps --target DIR enzyme-ad==0.0.16 absl-py
                                  #     and PYTHONPATH=DIR
  python bench/vs_enzyme.py --rounds 7
  python bench/vs_enzyme.py --only normalize --sizes 4000 16000 --zymase src
  python bench/vs_enzyme.py --only --workloads            # the bench workloads alone
  python bench/vs_enzyme.py --zymase-flags=--no-strong-zero --only normalize
  python bench/vs_enzyme.py --only normalize --zymase src --baseline /work/main/src   # a change, side by side
  python bench/vs_enzyme.py --only normalize --toolchain  # zymase's derivative built by LLVM 24 too

``--workloads`` also runs the bench workloads (src/zymase/bench/workloads: GMM, BA, LSTM,
hand, ODE, FFT, normalization), which are C but not C++, in their own harness
(bench_common.h) through Enzyme-JAX's LLVM-IR door: clang-19 writes their IR with the
flags zymase cc gets (optimization deferred), and Enzyme-JAX runs its O3 pipeline with
Enzyme's pass on it. Their report is the harness's best per-call time.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "bench" / "vs_enzyme"
CLANG = shutil.which("clang-19") or "clang"
BUILDS = ("zymase", "clang", "enzyme", "enzyme-clang")
#: bytes between the page offsets of successive arrays of the harness's layout (vs_harness.h's
#: VS_STAGGER, the same in every build; --stagger)
STAGGER = 256
STUB_C = "int enzyme_dup, enzyme_const;\ndouble vs_enzyme_stub(void *f, ...) { (void)f; return 0; }\n"


def normalize_closed_form(x: np.ndarray) -> np.ndarray:
    """d/dx of sum_i w_i x_i / |x| with w_i = 1 + 0.001 i (normalize.c's objective)."""
    w = 1.0 + 0.001 * np.arange(x.size)
    m = np.linalg.norm(x)
    return w / m - (w @ x) * x / m**3


@dataclass
class Program:
    name: str  # what --only selects and the report shows
    file: str  # bench/vs_enzyme/<file>.c
    sizes: tuple[int, ...]
    inputs: Callable[[int], np.ndarray]  # the inputs x for size n
    reps: Callable[[int], int]  # calls per measurement
    closed_form: Callable[[np.ndarray], np.ndarray] | None = None
    defines: tuple[str, ...] = ()  # macros every build defines

    @property
    def source(self) -> Path:
        return PROGRAMS / f"{self.file}.c"

    def text(self) -> str:
        return ("".join(f"#define {d} 1\n" for d in self.defines) + f"#define VS_STAGGER {STAGGER}\n"
                + self.source.read_text())


def _uniform_plus_one(n: int) -> np.ndarray:
    return 1.0 + np.random.default_rng(7).random(n)


def _gray_scott_state(n: int) -> np.ndarray:
    """u then v for n // 2 cells, as bench/parity/reaction_diffusion.c draws them."""
    rng = np.random.default_rng(3)
    m = n // 2
    return np.concatenate([1.0 - 0.5 * rng.random(m), 0.25 * rng.random(m)])


PROGRAM_LIST = [
    Program("normalize", "normalize", (4000, 16000), _uniform_plus_one,
            lambda n: max(200, 16_000_000 // n), normalize_closed_form),
    # sizes are the length of x: 2 x 4,096 cells, 50 steps (primal_parity.py's size)
    Program("reaction_diffusion", "reaction_diffusion", (8192,), _gray_scott_state,
            lambda n: max(20, 1_600_000 // n)),
    Program("reaction_diffusion_norestrict", "reaction_diffusion", (8192,), _gray_scott_state,
            lambda n: max(20, 1_600_000 // n), defines=("RD_NO_RESTRICT",)),
]


def host_cpu() -> str:
    """The CPU clang-19's -march=native picks (cc1 takes a name, not "native")."""
    out = subprocess.run([CLANG, "-march=native", "-###", "-x", "c", "-c", os.devnull],
                         capture_output=True, text=True).stderr
    words = [w.strip('"') for w in out.split()]
    return words[words.index("-target-cpu") + 1]


def clang_resource_include() -> str:
    out = subprocess.run([CLANG, "-print-resource-dir"], capture_output=True, text=True, check=True)
    return str(Path(out.stdout.strip()) / "include")


def run(argv: list[str], env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env)
    if proc.returncode:
        sys.exit(f"vs_enzyme.py: {' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")


class Executable:
    """A zymase cc or clang build of program + vs_main.c; run() returns (objective, primal
    call times, gradient call times, gradient)."""

    def __init__(self, exe: Path, grad: bool, work: Path):
        self.exe, self.grad, self.work = exe, grad, work

    def run(self, x: np.ndarray, reps: int):
        xin, out = self.work / "x.bin", self.work / "out.bin"
        x.tofile(xin)
        run([str(self.exe), str(x.size), str(reps), str(int(self.grad)), str(xin), str(out)])
        res = np.fromfile(out)
        return res[0], res[1:1 + reps], res[1 + reps:1 + 2 * reps], res[1 + 2 * reps:]


def build_executables(prog: Program, cpu: str, contract: str, level: str, zymase_src: Path | None,
                      zymase_flags: list[str], work: Path) -> dict[str, Executable]:
    tu = work / f"{prog.name}_tu.c"
    tu.write_text(prog.text() + "\n" + (PROGRAMS / "vs_main.c").read_text())
    flags = [f"-O{level}", "-fno-math-errno", f"-march={cpu}", f"-ffp-contract={contract}", "-I", str(PROGRAMS)]
    env = dict(os.environ)
    if zymase_src is not None:
        env["PYTHONPATH"] = str(zymase_src) + os.pathsep + env.get("PYTHONPATH", "")
    zexe = work / f"{prog.name}_zymase"
    run(["zymase", "cc", *flags, *zymase_flags, "--no-cache", str(tu), "-o", str(zexe), "-lm"], env=env)
    stub = work / "stub.c"
    stub.write_text(STUB_C)
    run([CLANG, "-O2", "-c", str(stub), "-o", str(work / "stub.o")])
    cexe = work / f"{prog.name}_clang"
    run([CLANG, *flags, "-DVS_STUB", str(tu), str(work / "stub.o"), "-o", str(cexe), "-lm"])
    return {"zymase": Executable(zexe, True, work), "clang": Executable(cexe, False, work)}


def zymase_final_ir(prog: Program, n: int, reps: int, cpu: str, contract: str, level: str,
                    zymase_src: Path | None, zymase_flags: list[str], work: Path) -> str:
    """zymase cc's derivative module (-S -emit-llvm) of the program with an entry of the form
    Enzyme-JAX's LLVM-IR door calls: buf holds the outputs (objective, call times, gradient)
    then the input x. n and reps come through volatiles, as in EnzymeJax.kernel."""
    tu = work / f"{prog.name}_llvm_entry.c"
    tu.write_text(prog.text() + f"""
void vs_llvm_entry(void *r, void *o, void *p, void **buf, void *st, void *pc) {{
    volatile int vn = {n}, vreps = {reps};
    vs_time(vn, vreps, 1, (const double *)buf[3], (double *)buf[2], (double *)buf[1], (double *)buf[0]);
}}
""")
    env = dict(os.environ)
    if zymase_src is not None:
        env["PYTHONPATH"] = str(zymase_src) + os.pathsep + env.get("PYTHONPATH", "")
    ll = work / f"{prog.name}_zymase_{n}.ll"
    run(["zymase", "cc", f"-O{level}", "-fno-math-errno", f"-march={cpu}", f"-ffp-contract={contract}",
         "-I", str(PROGRAMS), *zymase_flags, "--no-cache", "-S", "-emit-llvm", str(tu), "-o", str(ll)], env=env)
    text = ll.read_text()
    if "__enzyme_" in text:
        sys.exit(f"vs_enzyme.py: {ll} still calls __enzyme_: not a final derivative module")
    return text


class EnzymeJax:
    """Enzyme-JAX's cpp_call, set up once per process (see the module's docstring)."""

    def __init__(self, cpu: str, contract: str, work: Path):
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.jit(lambda a: a + 1)(jax.numpy.ones(2)).block_until_ready()  # jaxlib reads XLA_FLAGS
        saved = os.environ.get("XLA_FLAGS")
        os.environ["XLA_FLAGS"] = "--xla_backend_extra_options=-enzyme-always-inline=0"
        try:
            from enzyme_ad.jax import enzyme_call

            tiny = ("module @m { func.func @main(%a: tensor<2xf64>) -> tensor<2xf64> {"
                    " %0 = stablehlo.add %a, %a : tensor<2xf64> return %0 : tensor<2xf64> } }")
            enzyme_call.compile_mhlo_to_llvm_with_xla(tiny, False, "")  # its XLA reads XLA_FLAGS
        finally:
            if saved is None:
                del os.environ["XLA_FLAGS"]
            else:
                os.environ["XLA_FLAGS"] = saved
        stub_so = work / "libvs_stub.so"
        (work / "stub_so.c").write_text(STUB_C)
        run([CLANG, "-O2", "-shared", "-fPIC", str(work / "stub_so.c"), "-o", str(stub_so)])
        ctypes.CDLL(str(stub_so), mode=ctypes.RTLD_GLOBAL)  # the JIT links process symbols
        self.jax = jax
        self.argv = ("-I", str(PROGRAMS), "-isystem", clang_resource_include(), "-target-cpu", cpu,
                     f"-ffp-contract={contract}", "-funroll-loops", "-fgnuc-version=4.2.1")

    def kernel(self, prog: Program, n: int, reps: int, grad: bool):
        from enzyme_ad.jax import cpp_call

        jnp = self.jax.numpy
        # n and reps come through volatiles, as the executables read them from argv: a
        # constant trip count would let Enzyme-JAX's optimizer specialize the loops
        glue = f"""
void vs_entry(enzyme::tensor<double, 1>& obj, enzyme::tensor<double, {2 * reps}>& times,
              enzyme::tensor<double, {n}>& g, const enzyme::tensor<double, {n}>& x) {{
    volatile int vn = {n}, vreps = {reps};
    vs_time(vn, vreps, {int(grad)}, &x[0], &g[0], &times[0], &obj[0]);
}}
"""
        source = ("" if grad else "#define VS_STUB 1\n") + prog.text() + glue
        shapes = [self.jax.core.ShapedArray([1], jnp.float64),
                  self.jax.core.ShapedArray([2 * reps], jnp.float64),
                  self.jax.core.ShapedArray([n], jnp.float64)]
        fn = self.jax.jit(lambda x: cpp_call(x, out_shapes=shapes, source=source, fn="vs_entry",
                                              argv=self.argv))

        def call(x: np.ndarray):
            obj, times, g = (np.asarray(a) for a in fn(jnp.asarray(x)))
            return obj[0], times[:reps], times[reps:], g

        return call

    def llvm_kernel(self, ir: str, n: int, reps: int):
        """A module of LLVM IR that needs no AD (zymase_final_ir's) through Enzyme-JAX's LLVM-IR
        door: its O3 pipeline and code generation, LLVM 24's."""
        from enzyme_ad.jax import primitives

        jnp = self.jax.numpy
        shapes = [self.jax.core.ShapedArray([1], jnp.float64),
                  self.jax.core.ShapedArray([2 * reps], jnp.float64),
                  self.jax.core.ShapedArray([n], jnp.float64)]
        fn = self.jax.jit(lambda x: primitives.ffi_call(x, out_shapes=shapes, source=ir, fn="vs_llvm_entry",
                                                         argv=self.argv, lang=primitives.LANG_LLVM))

        def call(x: np.ndarray):
            obj, times, g = (np.asarray(a) for a in fn(jnp.asarray(x)))
            return obj[0], times[:reps], times[reps:], g

        return call


#: the bench workloads (src/zymase/bench/workloads, zymase bench's cases) --workloads runs,
#: one case each: ADBench's headline GMM, the --quick sizes of the others
WORKLOAD_CASES = {"gmm": "d=10 K=25 n=1000", "ba": "small n=49 m=7776 p=31843", "lstm": "l=2 c=1024",
                  "hand": "simple small c=100", "ode": "cells=100 steps=10000", "fft": "n=1024",
                  "normalize": "n=10000"}


class Workload:
    """One case of a bench workload, in its own harness (bench_common.h: best per-call time of
    batches, finite-difference check), built by zymase cc and through Enzyme-JAX's LLVM-IR
    door: clang-19's front end (the same flags, optimization deferred) writes the IR, with
    the program's main renamed and an entry of the form Enzyme-JAX calls added; Enzyme-JAX
    links it into its module and runs its O3 pipeline with Enzyme's pass on it. C that is not
    C++ (most of these programs) cannot go through cpp_call itself."""

    def __init__(self, case, cpu: str, level: str, zymase_src: Path | None, ej: "EnzymeJax", work: Path):
        from zymase.bench.cases import WORKLOAD_DIR

        self.case, self.ej = case, ej
        name = case.workload.name
        self.args, _ = case.prepare(work, None)
        flags = [f"-O{level}", f"-march={cpu}", *case.workload.flags, "-I", str(WORKLOAD_DIR)]
        env = dict(os.environ)
        if zymase_src is not None:
            env["PYTHONPATH"] = str(zymase_src) + os.pathsep + env.get("PYTHONPATH", "")
        self.exe = work / f"{name}.zymase"
        run(["zymase", "cc", *flags, "--no-cache", str(case.workload.source), "-o", str(self.exe), "-lm"], env=env)
        argv = ", ".join(f'"{a}"' for a in [name, *self.args])
        entry = work / f"{name}_entry.c"
        entry.write_text(
            f'#define main vs_workload_main\n#include "{case.workload.source}"\n#undef main\n'
            "void vs_llvm_entry(void *r, void *o, void *p, void **buf, void *st, void *pc) {\n"
            f"    static char *argv[] = {{{argv}, 0}};\n"
            f"    ((double *)buf[0])[0] = vs_workload_main({1 + len(self.args)}, argv);\n"
            "    fflush(stdout);\n    fflush(stderr);\n}\n")
        ir = work / f"{name}_entry.ll"
        run([CLANG, *flags, "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", str(entry), "-o", str(ir)])
        jax, jnp = ej.jax, ej.jax.numpy
        from enzyme_ad.jax import primitives

        source = ir.read_text()
        self.fn = jax.jit(lambda x: primitives.ffi_call(
            x, out_shapes=[jax.core.ShapedArray([1], jnp.float64)], source=source, fn="vs_llvm_entry",
            argv=ej.argv, lang=primitives.LANG_LLVM))
        self.out = work / f"{name}_enzyme.out"

    def zymase(self, env: dict[str, str]) -> dict:
        proc = subprocess.run([str(self.exe), *self.args], capture_output=True, text=True, env={**os.environ, **env})
        return self._report(proc.stdout, proc.returncode, "zymase", proc.stderr)

    def enzyme(self, env: dict[str, str]) -> dict:
        saved_env = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(self.out, "wb") as f:
                os.dup2(f.fileno(), 1)  # the JIT-compiled program prints its report on fd 1
                rc = int(np.asarray(self.fn(self.ej.jax.numpy.zeros(1))[0])[0])
        finally:
            os.dup2(saved, 1)
            os.close(saved)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return self._report(self.out.read_text(), rc, "enzyme", "")

    def _report(self, stdout: str, rc: int, build: str, stderr: str) -> dict:
        import json

        line = next((ln for ln in reversed(stdout.splitlines()) if ln.startswith("{")), None)
        report = json.loads(line) if line else {}
        report["rc"] = rc
        report["stderr"] = stderr.strip()[-500:]
        return report


def run_workloads(names: list[str], rounds: int, cpu: str, level: str, zymase_src: Path | None,
                  ej: "EnzymeJax", work: Path) -> list[str]:
    from zymase.bench.cases import suite

    cases = {c.workload.name: c for c in suite(quick=False)
             if c.workload.name in names and c.label == WORKLOAD_CASES[c.workload.name]}
    print("\n| workload | size | build | primal us (best) | gradient us (best) | gradient / primal |")
    print("|---|---|---|---|---|---|")
    summary = []
    for name in names:
        case = cases[name]
        w = Workload(case, cpu, level, zymase_src, ej, work)
        timing = {"BENCH_FD": "0"}
        first = {"zymase": w.zymase({}), "enzyme": w.enzyme({})}  # with the finite-difference check
        notes = []
        for build, rep in first.items():
            if rep["rc"] or "grad_s" not in rep:
                notes.append(f"{build}'s gradient FAILED its check (exit {rep['rc']}; max rel err vs finite "
                             f"differences {rep.get('max_rel_err_fd')}) {rep['stderr']}".rstrip())
            else:
                notes.append(f"{build} matches finite differences (max rel err {rep['max_rel_err_fd']:.1e})")
        if first["zymase"]["rc"] or "grad_s" not in first["zymase"]:
            sys.exit(f"vs_enzyme.py: {name} {case.label}: zymase's build failed: {notes[0]}")
        primal = {"zymase": [], "enzyme": []}
        grad = {"zymase": [], "enzyme": []}
        for r in range(rounds):
            for build in (("zymase", "enzyme") if r % 2 == 0 else ("enzyme", "zymase")):
                rep = w.zymase(timing) if build == "zymase" else w.enzyme(timing)
                if "grad_s" in rep:
                    primal[build].append(rep["primal_s"])
                    grad[build].append(rep["grad_s"])
        for build in ("zymase", "enzyme"):
            if not grad[build]:
                print(f"| {name} | {case.label} | {build} | - | - | - |")
                continue
            mp, mg = statistics.median(primal[build]), statistics.median(grad[build])
            print(f"| {name} | {case.label} | {build} | {mp * 1e6:.1f} ({min(primal[build]) * 1e6:.1f}) | "
                  f"{mg * 1e6:.1f} ({min(grad[build]) * 1e6:.1f}) | {mg / mp:.2f} |")
        if grad["enzyme"]:
            gz, ge = statistics.median(grad["zymase"]), statistics.median(grad["enzyme"])
            pz, pe = statistics.median(primal["zymase"]), statistics.median(primal["enzyme"])
            wrong = " (ENZYME'S GRADIENT IS WRONG)" if first["enzyme"]["rc"] else ""
            summary.append(f"{name} {case.label}: gradient zymase / Enzyme{wrong} {gz / ge:.2f}, primal zymase / "
                           f"Enzyme {pz / pe:.2f}; " + "; ".join(notes))
        else:
            summary.append(f"{name} {case.label}: no Enzyme timing; " + "; ".join(notes))
    return summary


def check(prog: Program, n: int, x: np.ndarray, grads: dict[str, np.ndarray],
          objective: Callable[[np.ndarray], float]) -> tuple[str, bool]:
    """Each gradient against central differences at three entries (and the closed form when
    the program has one). A wrong zymase gradient exits (status 1); a wrong Enzyme gradient
    is reported, and the timings are still shown. Returns the note and whether Enzyme's
    gradient is right."""
    wrong: dict[str, str] = {}
    for j in (0, n // 2, n - 1):
        h = 1e-5 * max(1.0, abs(x[j]))
        xp, xm = x.copy(), x.copy()
        xp[j] += h
        xm[j] -= h
        fd = (objective(xp) - objective(xm)) / (2 * h)
        for name, g in grads.items():
            if abs(g[j] - fd) > 1e-5 * max(abs(fd), 1e-12) and name not in wrong:
                wrong[name] = f"entry {j} is {g[j]:.6g}, central differences give {fd:.6g}"
    notes = []
    if prog.closed_form is not None:
        ref = prog.closed_form(x)
        for name, g in grads.items():
            err = float(np.max(np.abs(g - ref) / np.maximum(np.abs(ref), 1e-300)))
            if err > 1e-9 and name not in wrong:
                wrong[name] = f"off its closed form by {err:.2e}"
            notes.append(f"{name} vs closed form {err:.1e}")
    if "zymase" in wrong:
        sys.exit(f"vs_enzyme.py: {prog.name} n={n}: zymase's gradient is wrong: {wrong['zymase']}")
    if "enzyme" in wrong:
        z, e = grads["zymase"], grads["enzyme"]
        off = int(np.sum(np.abs(z - e) > 1e-6 * np.maximum(np.abs(z), 1e-12)))
        return (f"zymase's gradient matches central differences at 3 entries; ENZYME'S GRADIENT IS "
                f"WRONG: {wrong['enzyme']} ({off} of {n} entries differ from zymase's)"), False
    z, e = grads["zymase"], grads["enzyme"]
    err = float(np.max(np.abs(z - e) / np.maximum(np.abs(e), 1e-300)))
    notes = ["both match central differences at 3 entries (1e-5)"] + notes + [f"zymase vs Enzyme {err:.1e}"]
    return "; ".join(notes), True


def main() -> int:
    global STAGGER
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="*", help="programs (default all; none with --only alone): "
                   + " ".join(q.name for q in PROGRAM_LIST))
    p.add_argument("--sizes", nargs="*", type=int, help="sizes n (default each program's own)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--zymase", type=Path, help="zymase source tree (src/) for zymase cc (default: installed)")
    p.add_argument("--fp-contract", default="on", choices=("on", "off"),
                   help="-ffp-contract for every build (default on, clang's C default)")
    p.add_argument("--opt", default="2", choices=("2", "3"),
                   help="-O level of the zymase cc and clang builds (default 2; Enzyme-JAX's pipeline is O3)")
    p.add_argument("--zymase-flags", default="", help="more flags for zymase cc (e.g. --no-strong-zero)")
    p.add_argument("--workloads", nargs="*", choices=sorted(WORKLOAD_CASES),
                   help="also (or, with --only and no name, only) the bench workloads, in their own "
                        "harness through Enzyme-JAX's LLVM-IR door (all when given no name)")
    p.add_argument("--keep", type=Path, help="build in this directory and keep it")
    p.add_argument("--baseline", type=Path,
                   help="another zymase source tree (src/): its zymase cc build, 'zymase-base', is timed "
                        "alternately with the others (a change against main, side by side)")
    p.add_argument("--toolchain", action="store_true",
                   help="also 'zymase-llvm24': zymase cc's final derivative IR built by Enzyme-JAX's LLVM 24 "
                        "(its O3 and code generation, no AD): separates the toolchain from the AD")
    p.add_argument("--stagger", type=int, default=STAGGER,
                   help="the harness's memory layout: array k starts STAGGER * k bytes (modulo 4 KiB) past a "
                        f"page boundary, in every build (default {STAGGER}); layouts move streaming loops by "
                        "several percent")
    ns = p.parse_args()
    STAGGER = ns.stagger
    try:
        importlib.import_module("enzyme_ad.jax")
    except ImportError as exc:
        print(f"vs_enzyme.py: skipped: enzyme-ad (Enzyme-JAX) is not importable ({exc}); "
              "pip install enzyme-ad==0.0.16 (Python 3.11) to compare against Enzyme")
        return 0
    work = ns.keep or Path(tempfile.mkdtemp(prefix="vs_enzyme_"))
    work.mkdir(parents=True, exist_ok=True)
    cpu = host_cpu()
    zsrc = ns.zymase.resolve() if ns.zymase else None
    load = os.getloadavg()
    print(f"# vs_enzyme.py: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load {load[0]:.1f}, "
          f"cpu {cpu}, -O{ns.opt}, -ffp-contract={ns.fp_contract}, {ns.rounds} rounds, zymase {zsrc or 'from PYTHONPATH or installed'} "
          f"stagger {ns.stagger}, {ns.zymase_flags}".rstrip(", "))
    ej = EnzymeJax(cpu, ns.fp_contract, work)
    progs = [q for q in PROGRAM_LIST if ns.only is None or q.name in ns.only]
    if progs:
        print("\n| program | n | build | primal us (best) | gradient us (best) | gradient / primal |")
        print("|---|---|---|---|---|---|")
    summary = []
    extra = (("zymase-base",) if ns.baseline else ()) + (("zymase-llvm24",) if ns.toolchain else ())
    builds = BUILDS + extra
    grads = ("zymase", "enzyme") + extra
    for prog in progs:
        exes = build_executables(prog, cpu, ns.fp_contract, ns.opt, zsrc, ns.zymase_flags.split(), work)
        if ns.baseline:
            base = work / "baseline"
            base.mkdir(exist_ok=True)
            exes["zymase-base"] = build_executables(prog, cpu, ns.fp_contract, ns.opt, ns.baseline.resolve(),
                                                    ns.zymase_flags.split(), base)["zymase"]
        for n in ns.sizes or prog.sizes:
            reps = prog.reps(n)
            x = prog.inputs(n)
            t0 = time.time()
            runners = {**{k: (lambda e: lambda xx: e.run(xx, reps))(e) for k, e in exes.items()},
                       "enzyme": ej.kernel(prog, n, reps, True),
                       "enzyme-clang": ej.kernel(prog, n, reps, False)}
            if ns.toolchain:
                runners["zymase-llvm24"] = ej.llvm_kernel(
                    zymase_final_ir(prog, n, reps, cpu, ns.fp_contract, ns.opt, zsrc, ns.zymase_flags.split(), work),
                    n, reps)
            first = {k: r(x) for k, r in runners.items()}  # also compiles the Enzyme kernels
            compile_s = time.time() - t0
            objective = lambda xx: float(exes["clang"].run(xx, 1)[0])  # noqa: E731
            note, enzyme_right = check(prog, n, x, {k: first[k][3] for k in ("zymase", "enzyme")}, objective)
            if ns.baseline:
                off = float(np.max(np.abs(first["zymase"][3] - first["zymase-base"][3])))
                note += f"; zymase vs zymase-base: max abs difference {off:.1e}"
            primal = {k: [] for k in builds}
            grad = {k: [] for k in grads}
            for r in range(ns.rounds):
                order = builds[r % len(builds):] + builds[:r % len(builds)]
                for k in order:
                    _, tp, tg, _ = runners[k](x)
                    primal[k].append(float(np.median(tp)))
                    if k in grad:
                        grad[k].append(float(np.median(tg)))
            med = {k: statistics.median(v) for k, v in primal.items()}
            gmed = {k: statistics.median(v) for k, v in grad.items()}
            for k in builds:
                pr = f"{med[k] * 1e6:.2f} ({min(primal[k]) * 1e6:.2f})"
                if k in grad:
                    gr = f"{gmed[k] * 1e6:.2f} ({min(grad[k]) * 1e6:.2f})"
                    ratio = f"{gmed[k] / med[k]:.2f}"
                else:
                    gr = ratio = "-"
                print(f"| {prog.name} | {n} | {k} | {pr} | {gr} | {ratio} |")
            per_round = [z / e for z, e in zip(grad["zymase"], grad["enzyme"])]
            summary.append(
                f"{prog.name} n={n}: gradient zymase / Enzyme{'' if enzyme_right else ' (Enzyme wrong)'} {gmed['zymase'] / gmed['enzyme']:.2f} "
                f"(per round {min(per_round):.2f}-{max(per_round):.2f}); primal zymase / Enzyme "
                f"{med['zymase'] / med['enzyme']:.2f}, clang / Enzyme-JAX's clang "
                f"{med['clang'] / med['enzyme-clang']:.2f}; {reps} calls per measurement; "
                f"first run with compiles {compile_s:.1f} s; {note}")
            if ns.baseline:
                per_round = [z / b for z, b in zip(grad["zymase"], grad["zymase-base"])]
                summary.append(f"{prog.name} n={n}: gradient zymase / zymase-base {gmed['zymase'] / gmed['zymase-base']:.3f} "
                               f"(per round {min(per_round):.3f}-{max(per_round):.3f}); zymase-base / Enzyme "
                               f"{gmed['zymase-base'] / gmed['enzyme']:.2f}")
            if ns.toolchain:
                off = float(np.max(np.abs(first["zymase"][3] - first["zymase-llvm24"][3])))
                per_round = [z / e for z, e in zip(grad["zymase-llvm24"], grad["enzyme"])]
                own = [z / e for z, e in zip(grad["zymase"], grad["zymase-llvm24"])]
                summary.append(f"{prog.name} n={n}: gradient zymase-llvm24 / Enzyme {gmed['zymase-llvm24'] / gmed['enzyme']:.3f} "
                               f"(per round {min(per_round):.3f}-{max(per_round):.3f}); zymase / zymase-llvm24 "
                               f"{gmed['zymase'] / gmed['zymase-llvm24']:.3f} (per round {min(own):.3f}-{max(own):.3f}); "
                               f"zymase vs zymase-llvm24 gradients: max abs difference {off:.1e}")
    if ns.workloads is not None:
        summary += run_workloads(ns.workloads or sorted(WORKLOAD_CASES), ns.rounds, cpu, ns.opt, zsrc, ej, work)
    print()
    for line in summary:
        print("- " + line)
    load = os.getloadavg()
    print(f"\n# load at the end {load[0]:.1f}")
    if not ns.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
