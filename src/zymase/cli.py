"""Command line: ``zymase`` (cc, run, opt, demo) and ``zymase-opt``.

This module only wires pieces together; every user-caused failure is printed as one
``zymase: error: ...`` line (exit code 1). Set ZYMASE_DEBUG=1 for tracebacks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path

from zymase.errors import ZymaseError

USAGE = """usage: zymase <command> [options]

commands:
  cc [clang flags] file.c... [-o exe]   compile C with __enzyme_autodiff/__enzyme_fwddiff
                                       (-O0..-O3, -c, -S -emit-llvm, -I, -D, -l, -L, -g; --time;
                                       --no-preopt: differentiate before optimizing;
                                       --no-cache: do not use the derivative cache)
  c++ [clang flags] file... [-o exe]   the same as cc, every file compiled as C++ (also
                                       cc -x c++); C++ sources are linked with libstdc++
  run file.c [clang flags] [-- args]   compile and run, returning the program's exit code
  cache [clear]                        where the derivative cache is and what it holds;
                                       clear: remove its entries
  opt in.ll [-o out.ll] [-O N] [--no-preopt] [--print-activity]
                                       LLVM IR in, LLVM IR with derivatives out
  demo                                 the classic examples
  --version                            print the version
  bench [--quick] [--json F] [--plots D]
                                       benchmark suite: gradient vs primal, --no-preopt, JAX, PyTorch

cc, run, opt and zymase-opt take --no-strong-zero: IEEE propagation in derivatives (a zero
adjoint times an infinite partial is NaN) instead of strong zeros (it is zero).
"""

# clang options that take a separate argument
_CLANG_ARG_FLAGS = {"-I", "-D", "-U", "-include", "-isystem", "-iquote", "-x", "-std", "-target", "-arch"}


def _guard(fn, argv) -> int:
    try:
        return fn(argv)
    except ZymaseError as err:
        print(err.format(), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # an internal bug: one line, traceback on request
        if os.environ.get("ZYMASE_DEBUG"):
            traceback.print_exc()
        print(
            f"zymase: internal error: {type(exc).__name__}: {exc}; this is a bug in zymase, "
            "rerun with ZYMASE_DEBUG=1 and report it",
            file=sys.stderr,
        )
        return 2


def main(argv: list[str] | None = None) -> int:
    """The ``zymase`` command; ``argv`` None: this process's own arguments (the command
    line started it, and it ends when ``main`` returns)."""
    whole_process = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if argv else 1
    if argv[0] in ("--version", "-V"):
        from zymase import __version__

        print(f"zymase {__version__}")
        return 0
    cmd, rest = argv[0], argv[1:]
    commands = {"cc": cmd_cc, "c++": cmd_cxx, "run": cmd_run, "opt": cmd_opt, "demo": cmd_demo, "bench": cmd_bench,
                "cache": cmd_cache}
    if cmd not in commands:
        print(f"zymase: error: unknown command '{cmd}'; hint: run 'zymase --help'", file=sys.stderr)
        return 1
    if cmd in COMMAND_USAGE and any(a in ("-h", "--help") for a in rest):
        print(COMMAND_USAGE[cmd], end="")
        return 0
    if cmd in ("cc", "c++", "run", "opt"):
        from zymase.collect_rarely import collecting_garbage_rarely, not_collecting_until_exit

        if whole_process:  # its garbage dies with it (zymase/collect_rarely.py)
            not_collecting_until_exit()
            return _end_process(_with_semantics(commands[cmd], rest))
        with collecting_garbage_rarely():
            return _with_semantics(commands[cmd], rest)
    return _guard(commands[cmd], rest)


def _end_process(code: int) -> int:
    """A command-line build's process ends here, without Python's teardown: freeing the
    engine's objects (xDSL's classes, the IR) and LLVM's modules one by one took 0.11-0.15 s
    of CPU after a hand build, for memory the system takes back at once. Nothing of a build
    is left to the teardown (its files are written and closed, its temporary directories
    removed, no finalizer or thread of zymase's is pending); the output streams are flushed
    first. Not under a profiler or a tracer (cProfile and coverage write their data at
    exit), nor while another thread runs (Python would wait for it): then ``code`` is
    returned and Python exits as usual."""
    import threading

    if sys.getprofile() is not None or sys.gettrace() is not None or threading.active_count() > 1:
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # (a closed pipe: Python's own exit reports it)
        return code
    os._exit(code)


_NO_STRONG_ZERO = "--no-strong-zero"


def _with_semantics(fn, argv: list[str]) -> int:
    """Run a command with the derivative semantics its flags ask for; the flag is
    taken out of the arguments before ``--`` (those after belong to the program)."""
    from zymase.autodiff.semantics import derivative_semantics

    own = argv[: argv.index("--")] if "--" in argv else argv
    strong = _NO_STRONG_ZERO not in own
    rest = [x for x in own if x != _NO_STRONG_ZERO] + argv[len(own):]
    limit, rest = _tape_limit_flag(rest)
    if limit is _BAD_FLAG:
        return 1
    from zymase.autodiff.checkpoint import limiting_tape

    with derivative_semantics(strong_zero=strong), limiting_tape(limit):
        return _guard(fn, rest)


_TAPE_LIMIT = "--tape-limit"
_BAD_FLAG = object()


def _tape_limit_flag(argv: list[str]):
    """``--tape-limit=SIZE`` (or ``--tape-limit SIZE``) taken out of the arguments before
    ``--``: the limit in bytes (None when absent)."""
    from zymase.autodiff.checkpoint import parse_size
    from zymase.errors import ZymaseError

    own = argv[: argv.index("--")] if "--" in argv else argv
    limit, rest, i = None, [], 0
    while i < len(own):
        a = own[i]
        if a == _TAPE_LIMIT or a.startswith(_TAPE_LIMIT + "="):
            value = a.partition("=")[2] if "=" in a else (own[i + 1] if i + 1 < len(own) else "")
            i += 1 if "=" in a else 2
            try:
                limit = parse_size(value)
            except ZymaseError as err:
                print(err.format(), file=sys.stderr)
                return _BAD_FLAG, argv
            continue
        rest.append(a)
        i += 1
    return limit, rest + argv[len(own):]


#: ``zymase <command> --help`` (bench has its own argument parser).
COMMAND_USAGE = {
    "cc": """usage: zymase cc [clang flags] file.c... [-o exe]

Compile C that calls __enzyme_autodiff/__enzyme_fwddiff, like a C compiler driver.
  -O0 .. -O3, -Os, -Oz, -Ofast   optimization level (default -O0)
  -c                            compile only (object file)
  -S -emit-llvm                 write LLVM IR with the derivatives
  -o FILE                       output file (default a.out)
  -I DIR, -D NAME[=V], -g, -std=..., -f..., -m...    passed to clang
  -x c++                        compile the files that follow as C++ (also: zymase c++)
  -l LIB, -L DIR, -Wl,..., -static, -pthread        passed to the linker
  --time                        time per phase on stderr
  --no-preopt                   differentiate before optimizing (Enzyme's baseline)
  --no-strong-zero              IEEE propagation in derivatives: a zero adjoint times an
                                infinite partial is NaN (default: it is zero)
  --tape-limit=SIZE             bound the reverse sweep's tape (e.g. 16M, 1G; also
                                $ZYMASE_TAPE_LIMIT): time loops are reversed by binomial
                                checkpointing, snapshots of their state, recomputation
  --no-cache                    neither read nor write the derivative cache
                                ($ZYMASE_CACHE_DIR, default ~/.cache/zymase)
""",
    "run": """usage: zymase run file.c [clang flags] [-- program args]

Compile like `zymase cc` and run the program; exits with the program's exit code.
""",
    "opt": """usage: zymase opt in.ll [-o out.ll] [-O N | -ON] [--no-preopt] [--print-activity]

LLVM IR in (text; - for stdin), LLVM IR with the derivatives out.
  -O N, -ON          optimize at level N (0..3) before and after differentiation
  --no-preopt        differentiate the IR as given, optimize only the result
  --print-activity   print which values are active instead of differentiating
  --no-strong-zero   IEEE propagation in derivatives (0 * inf = NaN) instead of strong zeros
""",
    "cache": """usage: zymase cache [clear]

The derivative cache of zymase cc and of the Python transforms' cache=True. Per source
and options: the built IR and object file, keyed by a hash of clang's IR, the options and
zymase's version and sources; and the derivative IR of the differentiated part, keyed by
that part after the pre-AD pipeline. A rebuild of an unchanged file differentiates nothing.
It lives in $ZYMASE_CACHE_DIR if set, else $XDG_CACHE_HOME/zymase, else ~/.cache/zymase.
  zymase cache          print the directory, the number of entries and their size
  zymase cache clear    remove every entry
""",
    "demo": """usage: zymase demo

Build and run the classic examples (gradient, forward mode, memory) and check them.
""",
}


def read_text_input(path: str) -> str:
    """A text input file (LLVM IR, MLIR): every way it can fail is a ZymaseError."""
    p = Path(path)
    if not p.exists():
        raise ZymaseError(f"no such file: '{path}'", hint="check the path")
    if p.is_dir():
        raise ZymaseError(f"'{path}' is a directory, not a file", hint="pass the file to read")
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ZymaseError(f"cannot read '{path}': {exc.strerror}", hint="check the file's permissions") from None
    if data.startswith((b"BC\xc0\xde", b"\xde\xc0\x17\x0b")):
        raise ZymaseError(f"'{path}' is LLVM bitcode, and zymase reads LLVM IR text",
                          hint=f"convert it with llvm-dis {path} -o {p.stem}.ll")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZymaseError(f"'{path}' is not a text file (byte {exc.start} is not UTF-8)",
                          hint="pass LLVM IR or MLIR text") from None
    if "\0" in text:
        raise ZymaseError(f"'{path}' is not a text file (it contains NUL bytes)", hint="pass LLVM IR or MLIR text")
    return text


def read_stdin_text() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ZymaseError(f"the input on stdin is not text (byte {exc.start} is not UTF-8)",
                          hint="pass LLVM IR or MLIR text") from None


# ------------------------------------------------------------------------------ cc
class CcArgs:
    def __init__(self):
        self.sources: list[str] = []
        self.output: str | None = None
        self.level = 0
        self.clang: list[str] = []
        self.link: list[str] = []
        self.compile_only = False
        self.emit_llvm = False
        self.time = False
        self.preopt = True
        self.cache = True


def parse_cc_args(argv: list[str]) -> CcArgs:
    a = CcArgs()
    i = 0
    while i < len(argv):
        x = argv[i]
        if x == "-o":
            if i + 1 >= len(argv):
                raise ZymaseError("-o needs a file name", hint="zymase cc file.c -o exe")
            a.output = argv[i + 1]
            i += 2
            continue
        if x.startswith("-O"):
            lvl = x[2:] or "1"
            a.level = {"s": 2, "z": 2, "fast": 3, "g": 1}.get(lvl, None) if not lvl.isdigit() else min(int(lvl), 3)
            if a.level is None:
                raise ZymaseError(f"unknown optimization level '{x}'", hint="use -O0, -O1, -O2 or -O3")
            i += 1
            continue
        if x == "-c":
            a.compile_only = True
        elif x == "-emit-llvm":
            a.emit_llvm = True
        elif x == "-S":
            pass
        elif x == "--time":
            a.time = True
        elif x == "--no-preopt":
            a.preopt = False
        elif x == "--no-cache":
            a.cache = False
        elif x.startswith(("-l", "-L", "-Wl,")) or x in ("-static", "-shared", "-rdynamic"):
            a.link.append(x)
        elif x in ("-pthread", "-fopenmp", "-fopenmp=libomp"):
            # both compile and link: -fopenmp links LLVM's OpenMP runtime (libomp)
            a.link.append(x)
            a.clang.append(x)
        elif x in _CLANG_ARG_FLAGS:
            if i + 1 >= len(argv):
                raise ZymaseError(f"{x} needs an argument")
            a.clang += [x, argv[i + 1]]
            i += 2
            continue
        elif x.startswith("-"):
            a.clang.append(x)
        else:
            a.sources.append(x)
        i += 1
    if not a.sources:
        raise ZymaseError("no input files", hint="zymase cc file.c -o exe")
    for s in a.sources:
        if not Path(s).exists():
            raise ZymaseError(f"no such file: '{s}'", hint="check the path")
        if Path(s).is_dir():
            raise ZymaseError(f"'{s}' is a directory, not a source file", hint="pass the .c file")
    return a


def cmd_cc(argv: list[str]) -> int:
    from zymase.frontends.c import Timings, build

    a = parse_cc_args(argv)
    t = Timings()
    build(a.sources, a.output, a.clang, a.link, a.level, t, compile_only=a.compile_only, emit_llvm=a.emit_llvm,
          preopt=a.preopt, cache=a.cache)
    if a.time:
        print(t.report(), file=sys.stderr)
    return 0


def cmd_cxx(argv: list[str]) -> int:
    """``zymase c++``: ``zymase cc`` with every source compiled as C++ (``-x c++``, which
    clang applies to the files after it) and linked with the C++ runtime."""
    return cmd_cc(["-x", "c++", *argv])


# ----------------------------------------------------------------------------- run
def cmd_run(argv: list[str]) -> int:
    from zymase.frontends.c import Timings, build

    if "--" in argv:
        k = argv.index("--")
        argv, prog_args = argv[:k], argv[k + 1 :]
    else:
        prog_args = []
    a = parse_cc_args(argv)
    if a.output or a.compile_only:
        raise ZymaseError("zymase run does not take -o or -c", hint="use zymase cc to build a file")
    t = Timings()
    with tempfile.TemporaryDirectory(prefix="zymase-run-") as tmp:
        exe = str(Path(tmp) / "prog")
        build(a.sources, exe, a.clang, a.link, a.level, t, preopt=a.preopt, cache=a.cache)
        if a.time:
            print(t.report(), file=sys.stderr)
        sys.stdout.flush()
        return subprocess.call([exe, *prog_args])


# ----------------------------------------------------------------------------- opt
def cmd_opt(argv: list[str]) -> int:
    from zymase.frontends.c import Timings, differentiate_llvm_ir
    from zymase.llvm import toolchain

    src, out, level, preopt, activity = None, None, None, True, False
    i = 0
    while i < len(argv):
        x = argv[i]
        if x == "-o" and i + 1 < len(argv):
            out = argv[i + 1]
            i += 2
            continue
        if x == "-O" and i + 1 < len(argv) and argv[i + 1].isdigit():  # "-O 2", as the help says
            level = min(int(argv[i + 1]), 3)
            i += 2
            continue
        if x.startswith("-O") and x[2:].isdigit():
            level = min(int(x[2:]), 3)
        elif x == "--no-preopt":
            preopt = False
        elif x == "--print-activity":
            activity = True
        elif x.startswith("-") and x != "-":
            raise ZymaseError(f"unknown option '{x}' for zymase opt", hint="see zymase --help")
        else:
            src = x
        i += 1
    if src is None:
        raise ZymaseError("no input file", hint="zymase opt in.ll -o out.ll (use - for stdin)")
    if src == "-":
        text, name = read_stdin_text(), "<stdin>"
    else:
        text, name = read_text_input(src), src
    # IR from a clang of another LLVM version (-march=native) names features LLVM 22
    # does not know: it would warn once per function and pass
    text = toolchain.drop_unknown_target_features(text)
    if activity:
        from zymase.autodiff.report import activity_report
        from zymase.llvm.annotations import apply_annotations
        from zymase.llvm.markers import lower_markers
        from zymase.llvm.pre_ad_marks import protect_annotated_functions, protect_marker_calls
        from zymase.llvm.reader import read_llvm_ir

        if preopt and level:
            text = toolchain.preopt(protect_annotated_functions(protect_marker_calls(text)), level)
        module = read_llvm_ir(text, name)
        apply_annotations(module)
        lower_markers(module)
        print(activity_report(module), end="")
        return 0
    t = Timings()
    # (functions no derivative reaches keep their IR, whatever they hold: inline assembly,
    # constructs the reader does not know; as zymase cc)
    ll = differentiate_llvm_ir(text, name, level or 0, t, preoptimize=preopt and level is not None,
                               only_reachable=True)
    # (without -O the derivative leaves zymase unoptimized: the barriers the reverse sweep
    # put for LLVM 22's vectorizer become the fences any LLVM compiles)
    ll = toolchain.optimize(ll, level) if level else toolchain.barriers_to_fences(ll)
    if out:
        toolchain.write_text_output(out, ll)
    else:
        sys.stdout.write(ll)
    return 0


# --------------------------------------------------------------------------- cache
def cmd_cache(argv: list[str]) -> int:
    from zymase import cache

    if argv == ["clear"]:
        directory, count = cache.clear()
        print(f"zymase: removed {count} cache entries from {directory}")
        return 0
    if argv:
        raise ZymaseError(f"unknown cache command '{' '.join(argv)}'", hint="zymase cache, or zymase cache clear")
    directory, count, size = cache.summary()
    print(f"zymase: derivative cache in {directory}: {count} entries, {size / 1e6:.1f} MB")
    return 0


# ---------------------------------------------------------------------------- demo
def cmd_demo(argv: list[str]) -> int:
    from zymase.demo import run_demo

    return run_demo()


# --------------------------------------------------------------------------- bench
def cmd_bench(argv: list[str]) -> int:
    from zymase.bench.runner import main as bench_main

    return bench_main(argv)


# ----------------------------------------------------------------------- zymase-opt
def opt_main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return _with_semantics(_opt_main, argv)


def _opt_main(argv: list[str]) -> int:
    from zymase.transforms.pipeline import PASSES, run_passes, split_pipeline

    import argparse

    p = argparse.ArgumentParser(prog="zymase-opt", description="MLIR in, MLIR out (xdsl-opt conventions)")
    p.add_argument("file", nargs="?", default="-")
    p.add_argument("-p", "--passes", default="", help="comma-separated passes: " + ", ".join(PASSES)
                   + '; with options: enzyme-wrap{infn=f outfn=df argTys=... retTys=... mode=ForwardMode}')
    p.add_argument("-o", "--output", default="-")
    p.add_argument("--list-rewrites", action="store_true", help="print the stablehlo-simplify patterns and exit")
    ns = p.parse_args(argv)
    if ns.list_rewrites:
        from zymase.transforms.hlo_rewrites import rewrite_table

        sys.stdout.write(rewrite_table())
        return 0
    if ns.file == "-":
        text, name = read_stdin_text(), "<stdin>"
    else:
        text, name = read_text_input(ns.file), ns.file
    out = run_passes(text, name, split_pipeline(ns.passes))
    if ns.output == "-":
        sys.stdout.write(out)
    else:
        from zymase.llvm.toolchain import write_text_output

        write_text_output(ns.output, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
