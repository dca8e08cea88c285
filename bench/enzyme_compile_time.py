"""What Enzyme's own build of the bench workloads costs, beside clang's and zymase cc's: the
yardstick for issue 29's compile-time target (``zymase cc -O2`` at most 3x ``clang -O2``).

Enzyme has no build here; PyPI's Enzyme-JAX (``enzyme-ad``, optional, not a CI dependency:
without it this script says so and exits 0) embeds a clang and Enzyme at LLVM 24. Its
LLVM-IR door (``enzyme_call.create_enzyme_kernel`` with ``Language.LLVM``, the door
``vs_enzyme.py --workloads`` uses) takes a module of LLVM IR, compiles a small C++ wrapper
around its entry with its own clang front end (``<cstdint>``, ``<tuple>`` and its tensor
header: a fixed cost per kernel), links the module in, makes every function but the wrapper's
``entry`` internal, runs LLVM's ``default<O3>`` with Enzyme's pass registered in it (as
Enzyme's clang plugin places it), and JIT-compiles the result with ORC (code generation at
the JIT's default level, in memory: no object file is written). The workloads are C, which
its C++ door cannot compile, so clang-19's front end writes their IR first (``-O2 -Xclang
-disable-llvm-passes``: the flags zymase cc and clang get, optimization deferred), with the
program's ``main`` renamed and an entry of the form the door calls added (its argc and argv
read through volatiles, so that the optimizer cannot fold the program away).

For each input (the six workloads of issue 29's target and the normalization program), round
after round, the variants run in turn (the order rotating, so the load of a shared machine
falls on all alike), each in a fresh process:

  clang         ``clang-19 -O2 -c`` of the file (front end, O2, code generation, object file)
  clang -O3     ``clang-19 -O3 -c``: what O3 instead of O2 costs LLVM 19 on the primal
  front end     clang-19's front end writing the IR the Enzyme variants start from
  enzyme        (a) the front end, then Enzyme-JAX on its IR with the ``__enzyme_*`` markers
                live: Enzyme differentiates them
  enzyme stub   (b) the same with the markers renamed (``-D__enzyme_autodiff=...``) to
                functions of an opaque shared library: the primal alone through the same
                pipeline, as clang -O2 -c sees the markers (external calls)
  zymase        (d) ``zymase cc -O2 -c --no-cache`` with bytecode warm, as
                ``bench/compile_time.py`` runs it

An Enzyme variant's process loads ``enzyme_call`` (without JAX), lets its XLA read the option
that turns Enzyme's ``enzyme-always-inline`` back off (vs_enzyme.py's docstring says why) and
JIT-compiles an empty module once: that start-up is measured and reported apart. Then it
times, in this order, CPU (the process's, all threads) and wall of: the kernel (the
measurement: wrapper front end, parse, link, O3 with Enzyme, JIT code generation); the same
module through ``compile_to_llvm`` (everything but code generation; it prints the optimized
module, which gives the instruction counts below); and the empty module's kernel again (the
wrapper's fixed cost). The Enzyme variants' totals are the front end's process plus the
kernel.

The derivative's size: instructions of the whole module after each pipeline (Enzyme-JAX's
output with and without the markers; ``zymase cc -O2 -S -emit-llvm``, the module after its
``optimize``, and ``clang-19 -O2 -S -emit-llvm``), their differences (both inline the
derivative into its caller), and of the function that calls the marker (``run_grad``).

Prints medians over rounds of CPU and wall, and the ratios (a)/(b), (a)/clang, zymase/clang,
zymase/(a). Run from the repository root (enzyme-ad 0.0.16 needs Python 3.11):

  pip install --no-deps --target DIR enzyme-ad==0.0.16 absl-py   # leaves the environment alone
  PYTHONPATH=DIR python bench/enzyme_compile_time.py --rounds 5
  PYTHONPATH=DIR python bench/enzyme_compile_time.py --only hand gmm --rounds 3 --zymase /work/main/src
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from compile_time import PHASE_RE, _clang, _cpu, zymase_cc  # noqa: E402
from llvm_share import bodies  # noqa: E402  (also puts this checkout's src/ on sys.path)

ROOT = BENCH.parent
NAMES = ("hand", "gmm", "ba", "lstm", "fft", "ode", "normalize")
#: the markers the workloads call, renamed for the stub variant
STUB_DEFINES = ("-D__enzyme_autodiff=zy_stub_autodiff", "-D__enzyme_autodiff_kpp=zy_stub_autodiff_kpp")
#: the stub variant's markers and Enzyme's activity globals, for the JIT to link against
STUB_C = """int enzyme_dup, enzyme_const, enzyme_out, enzyme_dupnoneed;
double zy_stub_autodiff(void *f, ...) { (void)f; return 0; }
typedef struct { double a, b; } zy_pair;
zy_pair zy_stub_autodiff_kpp(void *f, ...) { (void)f; zy_pair p = {0, 0}; return p; }
"""
EMPTY_IR = """define void @vs_llvm_entry(ptr %r, ptr %o, ptr %p, ptr %buf, ptr %st, ptr %pc) {
  %out = load ptr, ptr %buf
  store double 0.0, ptr %out
  ret void
}
"""
#: the door's entry and its one output and input (a double each; the workload's report
#: goes to the output, the input is not read)
ENTRY, SHAPES = "vs_llvm_entry", [("double", [1])]
XLA_FLAGS = "--xla_backend_extra_options=-enzyme-always-inline=0"
VARIANTS = ("clang", "clang -O3", "front end", "enzyme", "enzyme stub", "zymase IR", "zymase")
#: the variants timed inside Enzyme-JAX's process
DOOR = ("enzyme", "enzyme stub", "zymase IR")
_MARKER_CALL = re.compile(r"call .*@(__enzyme_autodiff\w*|zy_stub_autodiff\w*)\(")


def enzyme_call_path() -> Path | None:
    """enzyme-ad's extension module, found without importing enzyme_ad.jax (which imports JAX)."""
    try:
        spec = importlib.util.find_spec("enzyme_ad")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted((Path(folder) / "jax").glob("enzyme_call*.so"))
        if found:
            return found[0]
    return None


# ---- the Enzyme variants' process ------------------------------------------------------

def child(job: dict) -> dict:
    """Runs in a fresh process: the start-up, then the timed compiles (see the docstring)."""
    import ctypes

    def timed(fn, *args) -> tuple[float, float]:
        w0, c0 = time.perf_counter(), time.process_time()
        fn(*args)
        return time.process_time() - c0, time.perf_counter() - w0

    out: dict[str, object] = {}
    os.environ["XLA_FLAGS"] = XLA_FLAGS
    for lib in job["stub_so"]:
        ctypes.CDLL(lib, mode=ctypes.RTLD_GLOBAL)  # the JIT links the process's symbols
    w0, c0 = time.perf_counter(), time.process_time()
    spec = importlib.util.spec_from_file_location("enzyme_call", job["enzyme_call"])
    ec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ec)
    tiny = ("module @m { func.func @main(%a: tensor<2xf64>) -> tensor<2xf64> {"
            " %0 = stablehlo.add %a, %a : tensor<2xf64> return %0 : tensor<2xf64> } }")
    ec.compile_mhlo_to_llvm_with_xla(tiny, False, "")  # its XLA reads XLA_FLAGS once
    argv = job["argv"]

    def kernel(ir: str) -> None:
        ec.create_enzyme_kernel(ir, ENTRY, SHAPES, SHAPES, argv, ec.ABI.Primal, ec.Language.LLVM, False, "", "cpu")

    kernel(EMPTY_IR)  # the JIT itself is created by the first kernel
    out["startup"] = (time.process_time() - c0, time.perf_counter() - w0)
    ir = Path(job["ir"]).read_text()
    out["kernel"] = timed(kernel, ir)
    out["to_llvm"] = timed(ec.compile_to_llvm, job["out_ll"], ir, ENTRY, SHAPES, SHAPES, argv,
                           ec.Language.LLVM, False, "")
    out["empty"] = timed(kernel, EMPTY_IR)
    return out


def capture_optimize_input(job: dict) -> None:
    """Runs in a fresh process: one zymase cc build of the entry file (the tree job["zymase"]),
    keeping the module its post-AD pipeline (``toolchain.optimize``) starts from."""
    sys.path.insert(0, job["zymase"])
    from llvm_share import record

    text = record(Path(job["entry"]), job["flags"])["optimize"]
    # the part zymase differentiated: the door's entry calls the marker's callers (each
    # void f(void *), as the workloads' run_grad) with an opaque pointer
    calls = []
    for caller in job["callers"]:
        if not re.search(rf"^define [^@]*void @{re.escape(caller)}\(ptr [^,)]*\)", text, re.M):
            sys.exit(f"enzyme_compile_time.py: {job['entry']}: no void {caller}(ptr) in zymase's module entering optimize")
        calls.append(f"  call void @{caller}(ptr %ctx)")
    entry = "\n".join([f"define void @{ENTRY}(ptr %r, ptr %o, ptr %p, ptr %buf, ptr %st, ptr %pc) {{",
                       "  %ctx = load volatile ptr, ptr %buf", *calls, "  ret void", "}"])
    text, found = re.subn(rf"^declare [^@]*@{ENTRY}\(.*$", entry, text, flags=re.M)
    Path(job["out"]).write_text(text if found else text + "\n" + entry + "\n")


# ---- the benchmark ---------------------------------------------------------------------

def entry_source(name: str, source: Path) -> str:
    """The workload with its main renamed and the entry the door calls (argc and argv through
    volatiles: constants would let the optimizer fold main's argument check and drop the program)."""
    return (f'#define main vs_workload_main\n#include "{source}"\n#undef main\n'
            "void vs_llvm_entry(void *r, void *o, void *p, void **buf, void *st, void *pc) {\n"
            f'    static char *args[] = {{"{name}", 0}};\n'
            "    volatile int argc = 1;\n    char **volatile argv = args;\n"
            "    ((double *)buf[0])[0] = vs_workload_main(argc, argv);\n}\n")


def undefined_symbols(text: str) -> tuple[list[str], list[str]]:
    """The functions and globals a module declares that neither this process (libc, libm)
    nor the stub library defines: zymase's module entering optimize declares the primal
    functions it calls (clang's pipeline defines them elsewhere)."""
    import ctypes
    import ctypes.util

    libs = [ctypes.CDLL(None), ctypes.CDLL(ctypes.util.find_library("m"))]
    defined = set(re.findall(r"^(?:int |double |zy_pair )(\w+)", STUB_C, re.M)) | {
        "enzyme_dup", "enzyme_const", "enzyme_out", "enzyme_dupnoneed"}

    def missing(name: str) -> bool:
        return name not in defined and not name.startswith("llvm.") and not any(hasattr(lib, name) for lib in libs)

    functions = [n for n in re.findall(r"^declare [^@]*@([-\w$.]+)\(", text, re.M) if missing(n)]
    variables = [n for n in re.findall(r"^@([-\w$.]+) = external ", text, re.M) if missing(n)]
    return functions, variables


def stub_library(symbols: tuple[list[str], list[str]], path: Path, clang: str) -> Path:
    """A shared library defining ``symbols`` (functions, variables) as opaque stand-ins for the
    JIT to link against, as ``clang -c`` leaves them undefined; never called."""
    functions, variables = symbols
    c_file = path.with_suffix(".c")
    c_file.write_text("".join(f"void {f}(void) {{}}\n" for f in functions)
                      + "".join(f"char {v}[64];\n" for v in variables) + "int zy_stub_library;\n")
    out = path.with_suffix(".so")
    subprocess.run([clang, "-O2", "-shared", "-fPIC", str(c_file), "-o", str(out)], check=True)
    return out


def instructions(text: str) -> tuple[int, dict[str, int]]:
    """The instructions of a module and of each function defined in it."""
    per = {name: len(ops) for name, ops in bodies(text).items()}
    return sum(per.values()), per


def marker_callers(text: str) -> set[str]:
    """The functions of a module (before optimization) that call a marker."""
    callers, current = set(), None
    for line in text.split("\n"):
        if line.startswith("define "):
            current = re.search(r"@([-\w$.]+)\(", line).group(1)
        elif current and _MARKER_CALL.search(line):
            callers.add(current)
    return callers


def run_timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, str, str]:
    """Wall and CPU seconds of one process (with its children), its stdout and stderr."""
    t0, c0 = time.perf_counter(), _cpu()
    proc = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True)
    seconds, used = time.perf_counter() - t0, _cpu() - c0
    if proc.returncode != 0:
        sys.exit(f"enzyme_compile_time.py: failed: {' '.join(argv)}\n{proc.stderr[-3000:]}")
    return seconds, used, proc.stdout, proc.stderr


#: functions a derivative leaves when it is not inlined: Enzyme's and zymase's names for the
#: derivatives, and zymase's tape runtime
_DERIVATIVE_NAMES = ("diffe", "augmented_", "fakeaugmented_", "__zymase")


def derivative_sizes(name: str, source: Path, flags: list[str], ir: dict[str, Path], zcc: list[str],
                     zenv: dict[str, str], clang: str, work: Path) -> dict[str, object]:
    """Instructions after each pipeline: the whole module, the marker's callers, the
    derivative functions left standing (see the module's docstring)."""
    texts = {variant: Path(str(path) + ".opt.ll").read_text() for variant, path in ir.items()}
    if re.search(r"call .*@__enzyme_", texts["enzyme"]):
        sys.exit(f"enzyme_compile_time.py: {name}: Enzyme left a marker call: not differentiated")
    if "zy_stub_autodiff" not in texts["enzyme stub"]:
        sys.exit(f"enzyme_compile_time.py: {name}: the stub build lost its marker call")
    zll, cll = work / f"{name}_zymase.ll", work / f"{name}_clang.ll"
    zs = [a for a in zcc if a not in ("-c", "--time")]
    run_timed([*zs, "-S", "-emit-llvm", *flags, str(source), "-o", str(zll)], zenv, work)
    run_timed([clang, "-O2", *flags, "-S", "-emit-llvm", str(source), "-o", str(cll)], dict(os.environ), work)
    texts["zymase"], texts["clang"] = zll.read_text(), cll.read_text()
    texts["zymase optimize in"] = ir["zymase IR"].read_text()
    callers = marker_callers(ir["enzyme"].read_text())
    out: dict[str, object] = {"callers": sorted(callers)}
    for label, text in texts.items():
        total, per = instructions(text)
        out[label] = {"total": total, "callers": sum(per.get(c, 0) for c in callers),
                      "callers_kept": all(c in per for c in callers),
                      "derivative_functions": {f: n for f, n in per.items() if f.startswith(_DERIVATIVE_NAMES)}}
    return out


def _paired(a: list[float], b: list[float]) -> list[float]:
    return [x + y for x, y in zip(a, b)]


def report(names: list[str], results: dict[str, dict]) -> None:
    """The tables (markdown)."""
    for measure in ("cpu", "wall"):
        print(f"\n{measure.upper()} seconds, medians over rounds; (a) = front end + Enzyme-JAX's kernel, "
              "(b) the same with the markers stubbed, (c) clang -O2 -c, (d) zymase cc -O2 -c --no-cache")
        print("\n| input | lines | (c) clang | clang -O3 | front end | (a) Enzyme | (b) Enzyme stub | (d) zymase "
              "| (a)/(b) | (a)/(c) | (d)/(c) | (d)/(a) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        k = 0 if measure == "cpu" else 1
        for name in names:
            res = results[name]
            m = res[measure]
            a = median(_paired(m["front end"], [t[k] for t in res["inner"]["enzyme"]["kernel"]]))
            b = median(_paired(m["front end"], [t[k] for t in res["inner"]["enzyme stub"]["kernel"]]))
            c, d = median(m["clang"]), median(m["zymase"])
            print(f"| {name} | {res['lines']} | {c:.3f} | {median(m['clang -O3']):.3f} | {median(m['front end']):.3f} "
                  f"| {a:.3f} | {b:.3f} | {d:.3f} | {a / b:.2f} | {a / c:.2f} | {d / c:.2f} | {d / a:.2f} |")
    print("\nEnzyme-JAX's pieces, CPU seconds (medians) in its process: kernel = wrapper front end, parse, link, "
          "O3 (with Enzyme), JIT code generation; to LLVM = the same without code generation, printing the module; "
          "code generation ~ kernel - to LLVM; (e) = zymase's module entering its post-AD pipeline through the "
          "same door (LLVM 24's O3 and code generation, nothing to differentiate); empty = the wrapper alone; "
          "start-up = loading enzyme_call, its XLA's options, the first (empty) kernel")
    print("\n| input | (a) kernel | (a) to LLVM | (a) codegen | (b) kernel | (b) to LLVM | (b) codegen "
          "| AD: (a)-(b) to LLVM | AD: (a)-(b) kernel | (e) kernel | (e) to LLVM | (e) codegen | (e)/(a) kernel "
          "| empty | start-up |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        inner = results[name]["inner"]
        cell = {}
        for v in DOOR:
            kern = [t[0] for t in inner[v]["kernel"]]
            tol = [t[0] for t in inner[v]["to_llvm"]]
            cell[v] = (median(kern), median(tol), median([x - y for x, y in zip(kern, tol)]))
        empty = median([t[0] for v in inner for t in inner[v]["empty"]])
        start = median([t[0] for v in inner for t in inner[v]["startup"]])
        a, b, e = cell["enzyme"], cell["enzyme stub"], cell["zymase IR"]
        print(f"| {name} | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} | {b[0]:.3f} | {b[1]:.3f} | {b[2]:.3f} "
              f"| {a[1] - b[1]:.3f} | {a[0] - b[0]:.3f} | {e[0]:.3f} | {e[1]:.3f} | {e[2]:.3f} | {e[0] / a[0]:.2f} "
              f"| {empty:.3f} | {start:.3f} |")
    print("\nzymase cc's phases (--time, CPU seconds, medians)")
    for name in names:
        ph = results[name]["phases"]
        print(f"  {name}: " + "  ".join(f"{p} {median(v):.3f}" for p, v in ph.items() if p != "total"))
    print("\nInstructions after each pipeline. Whole modules: Enzyme-JAX's (a) and (b), zymase cc -O2 -S -emit-llvm "
          "(after its optimize, clang's primal linked in) and clang -O2 -S -emit-llvm. The derivative: the marker's "
          "callers (where both inline it) plus the derivative functions left standing (Enzyme's diffe*/augmented_*, "
          "zymase's diffe* and tape runtime __zymase_*); (e) zymase's module entering optimize (the differentiated "
          "part alone: the callers, the derivatives, the runtime) and the same after LLVM 24's O3")
    print("\n| input | (a) module | (b) module | (a)-(b) | (a) derivative | (b) callers | zymase cc module | clang module "
          "| zymase-clang | zymase cc derivative | (e) entering optimize | (e) after LLVM 24 O3 | functions left standing: "
          "Enzyme / zymase |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        sz = results[name]["sizes"]
        e, st, z, c = sz["enzyme"], sz["enzyme stub"], sz["zymase"], sz["clang"]
        zin, zo3 = sz["zymase optimize in"], sz["zymase IR"]

        def derivative(x: dict) -> int:
            return x["callers"] + sum(x["derivative_functions"].values())

        left = " / ".join(", ".join(f"{f} {n}" for f, n in x["derivative_functions"].items()) or "none" for x in (e, z))
        print(f"| {name} | {e['total']} | {st['total']} | {e['total'] - st['total']} | {derivative(e)} | {st['callers']} "
              f"| {z['total']} | {c['total']} | {z['total'] - c['total']} | {derivative(z)} | {zin['total']} "
              f"| {zo3['total']} | {left} |")


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--capture", type=Path, help=argparse.SUPPRESS)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--only", nargs="*", choices=NAMES, help="inputs (default: all)")
    p.add_argument("--zymase", type=Path, default=ROOT / "src", help="zymase source tree (src/) (default: this checkout's)")
    p.add_argument("--march", help="-march for every build (default none, as compile_time.py; the wrapper gets -target-cpu)")
    p.add_argument("--keep", type=Path, help="build in this directory and keep it (the IR of every variant)")
    ns = p.parse_args()
    if ns.child:
        print(json.dumps(child(json.loads(ns.child.read_text()))))
        return 0
    if ns.capture:
        capture_optimize_input(json.loads(ns.capture.read_text()))
        return 0
    so = enzyme_call_path()
    if so is None:
        print("enzyme_compile_time.py: skipped: enzyme-ad (Enzyme-JAX) is not importable; "
              "pip install --no-deps --target DIR enzyme-ad==0.0.16 absl-py and PYTHONPATH=DIR (Python 3.11)")
        return 0
    from zymase.bench.cases import WORKLOADS

    clang = _clang()
    resource = subprocess.run([clang, "-print-resource-dir"], capture_output=True, text=True, check=True).stdout.strip()
    work = ns.keep or Path(tempfile.mkdtemp(prefix="enzyme-compile-time-"))
    work.mkdir(parents=True, exist_ok=True)
    march = [f"-march={ns.march}"] if ns.march else []
    argv = ["-isystem", str(Path(resource) / "include"), "-fgnuc-version=4.2.1",
            *(["-target-cpu", ns.march] if ns.march else [])]
    (work / "stub.c").write_text(STUB_C)
    stub_so = work / "libzy_stub.so"
    subprocess.run([clang, "-O2", "-shared", "-fPIC", str(work / "stub.c"), "-o", str(stub_so)], check=True)
    zcc, zenv, has_cache = zymase_cc("zymase", ns.zymase, "-O2", work)
    zcc += ["--no-cache"] if has_cache else []
    child_env = dict(os.environ)
    child_env.pop("PYTHONPATH", None)  # the child loads enzyme_call.so by its path, and nothing else
    names = ns.only or list(NAMES)
    load = os.getloadavg()
    print(f"# enzyme_compile_time.py: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load "
          f"{load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, {ns.rounds} rounds (and one untimed), -O2 "
          f"{' '.join(march)}, zymase {ns.zymase}, {so}")

    results: dict[str, dict] = {}
    for name in names:
        wl = WORKLOADS[name]
        flags = [*march, *wl.flags, "-I", str(wl.source.parent)]
        entry = work / f"{name}_entry.c"
        entry.write_text(entry_source(name, wl.source))
        ir = {"enzyme": work / f"{name}_enzyme_in.ll", "enzyme stub": work / f"{name}_stub_in.ll"}
        front = [clang, "-O2", *flags, "-Xclang", "-disable-llvm-passes", "-S", "-emit-llvm", str(entry)]
        subprocess.run([*front, *STUB_DEFINES, "-o", str(ir["enzyme stub"])], check=True)
        commands = {
            "clang": ([clang, "-O2", *flags, "-c", str(wl.source), "-o", str(work / "clang.o")], os.environ),
            "clang -O3": ([clang, "-O3", *flags, "-c", str(wl.source), "-o", str(work / "clang3.o")], os.environ),
            "front end": ([*front, "-o", str(ir["enzyme"])], os.environ),
            "zymase": ([*zcc, *flags, str(wl.source), "-o", str(work / "zymase.o")], zenv),
        }
        ir["zymase IR"] = work / f"{name}_zymase_optimize_in.ll"
        capture = work / f"{name}_capture.json"
        capture.write_text(json.dumps({"entry": str(entry), "flags": flags, "zymase": str(ns.zymase.resolve()),
                                       "out": str(ir["zymase IR"]),
                                       "callers": sorted(marker_callers(ir["enzyme stub"].read_text()))}))
        run_timed([sys.executable, __file__, "--capture", str(capture)], child_env, work)
        libs = [str(stub_so), str(stub_library(undefined_symbols(ir["zymase IR"].read_text()), work / f"lib{name}_undefined",
                                               clang))]
        for variant in DOOR:
            job = work / f"{name}_{variant.replace(' ', '_')}.json"
            job.write_text(json.dumps({"enzyme_call": str(so), "stub_so": libs, "argv": argv,
                                       "ir": str(ir[variant]), "out_ll": str(ir[variant]) + ".opt.ll"}))
            commands[variant] = ([sys.executable, __file__, "--child", str(job)], child_env)
        cpu = {v: [] for v in VARIANTS}
        wall = {v: [] for v in VARIANTS}
        inner: dict[str, dict[str, list[tuple[float, float]]]] = {v: {} for v in DOOR}
        phases: dict[str, list[float]] = {}
        for r in range(ns.rounds + 1):  # round 0 writes zymase's bytecode and warms the file cache
            for variant in VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]:
                argv_v, env = commands[variant]
                seconds, used, out, err = run_timed(argv_v, env, work)
                if r == 0:
                    continue
                cpu[variant].append(used)
                wall[variant].append(seconds)
                if variant in inner:
                    for key, value in json.loads(out).items():
                        inner[variant].setdefault(key, []).append(tuple(value))
                if variant == "zymase":
                    for phase, _, ms in PHASE_RE.findall(err):
                        phases.setdefault(phase, []).append(float(ms) / 1000)
        results[name] = {"cpu": cpu, "wall": wall, "inner": inner, "phases": phases,
                         "lines": sum(1 for _ in open(wl.source)),
                         "sizes": derivative_sizes(name, wl.source, flags, ir, zcc, zenv, clang, work)}
    report(names, results)
    load = os.getloadavg()
    print(f"\n# load at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    if not ns.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
