"""Command line of the fuzzer (run from the repository root).

    python -m tests.fuzz --seed S --count N [--lang c|njit|jax|both|c-omp|njit-prange|c-nested|c-ckpt|njit-hessian|c-mem|c++-stl]
                         [--levels O0,O2,...] [--jobs J] [--out DIR] [--valgrind-every K]
    python -m tests.fuzz reduce FAILING.c|FAILING.py [--out PATH]
    python -m tests.fuzz show SEED [--lang c|c-width|c-nested|c-mem|c++-stl|njit|jax|c-omp|njit-prange] [--without F1,F2]
                                   (print the generated program)
    python -m tests.fuzz summary DIR/results.jsonl    (the table of a finished or interrupted campaign)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

# njit-prange programs run at up to 4 Numba threads (reduce checks them in this process)
os.environ.setdefault("NUMBA_NUM_THREADS", "4")

from .campaign import all_levels, campaign, failure_header, read_header, summary_from_log
from .check_c import CKPT_FLAGS, CXX_FLAGS, Outcome, check_c_source, clang_clean, primal_clean
from .gen_c import C_FEATURES, generate_c, with_nested, with_width_lanes
from .gen_cmem import ALL_CMEM_FEATURES, generate_cmem
from .gen_cxx import ALL_CXX_FEATURES, generate_cxx
from .gen_jax import JAX_FEATURES, generate_jax
from .check_par import OMP_LEVEL_FLAGS, check_omp_source, check_prange_source
from .gen_njit import NJIT_FEATURES, generate_njit
from .gen_par import OMP_FEATURES, PRANGE_FEATURES, generate_omp, generate_prange

PAR_LANGS = ("c-omp", "njit-prange")
from .reduce import c_chunks, c_line_edits, njit_chunks, njit_line_edits, reduce_lines, signature


def _strip_header(text: str) -> str:
    return text.split("\n", 1)[1] if read_header(text) else text


def check_text(lang: str, text: str, level: str, valgrind: bool = False) -> Outcome:
    if lang in ("c", "c-width", "c-nested", "c-mem"):
        return check_c_source(text, level, valgrind=valgrind)
    if lang == "c-ckpt":
        return check_c_source(text, level, valgrind=valgrind, extra=CKPT_FLAGS)
    if lang == "c++-stl":
        return check_c_source(text, level, valgrind=valgrind, extra=CXX_FLAGS)
    if lang == "jax":
        from .check_jax import check_jax_source

        return check_jax_source(text)
    if lang == "c-omp":
        return check_omp_source(text, level)
    if lang == "njit-prange":
        return check_prange_source(text)
    if lang == "njit-hessian":
        from .check_hessian import check_hessian_source

        return check_hessian_source(text)
    from .check_njit import check_njit_source

    return check_njit_source(text)


def reduce_file(path: Path, out: Path | None) -> int:
    full = path.read_text()
    info = read_header(full)
    if info is None:
        print(f"{path}: no fuzz-failure header (write failures with a campaign)", file=sys.stderr)
        return 2
    lang, level, valgrind = info["lang"], info["level"], bool(info.get("valgrind"))
    text = _strip_header(full)
    first = check_text(lang, text, level, valgrind)
    want = signature(first)
    print(f"{path.name}: {first.kind} at {level}: {first.detail[:200]}")
    if first.kind not in ("wrong", "crashed"):
        print("it does not fail (any more): nothing to reduce")
        return 1
    tries = [0]

    def fails(candidate: str) -> bool:
        tries[0] += 1
        if lang.startswith("c") and not clang_clean(candidate, {"c-omp": OMP_LEVEL_FLAGS, "c++-stl": CXX_FLAGS}.get(lang, ())):
            return False
        if lang.startswith("njit") or lang == "jax":
            try:
                compile(candidate, "<candidate>", "exec")
            except SyntaxError:
                return False
        if signature(check_text(lang, candidate, level, valgrind)) != want:
            return False
        # the same failure, but not because the deletion left the program itself broken
        return not lang.startswith("c") or primal_clean(candidate, cxx=lang == "c++-stl")

    target = out or path.with_name(path.stem + ".reduced" + path.suffix)

    def progress(smaller: str) -> None:
        target.write_text(failure_header(lang, info["seed"], first) + smaller)

    if lang.startswith("c"):
        small = reduce_lines(text, fails, c_chunks, c_line_edits, progress=progress)
    else:
        small = reduce_lines(text, fails, njit_chunks, njit_line_edits, progress=progress)
    final = check_text(lang, small, level, valgrind)
    target.write_text(failure_header(lang, info["seed"], final) + small)
    target.with_suffix(".out").write_text(f"{final.kind}: {final.detail}\n\n{final.output}")
    print(f"reduced in {tries[0]} tries: {final.kind} at {level}: {final.detail[:300]}")
    print(f"written to {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "reduce":
        ap = argparse.ArgumentParser(prog="python -m tests.fuzz reduce")
        ap.add_argument("file", type=Path)
        ap.add_argument("--out", type=Path)
        a = ap.parse_args(argv[1:])
        return reduce_file(a.file, a.out)
    if argv and argv[0] == "show":
        ap = argparse.ArgumentParser(prog="python -m tests.fuzz show")
        ap.add_argument("seed", type=int)
        ap.add_argument("--lang", choices=["c", "c-width", "c-nested", "c-ckpt", "c-mem", "c++-stl", "njit", "njit-hessian",
                                           "jax", *PAR_LANGS],
                        default="c")
        ap.add_argument("--without", default="", help="comma-separated generator features to leave out")
        a = ap.parse_args(argv[1:])
        without = {f for f in a.without.split(",") if f}
        if a.lang == "c-omp":
            print(generate_omp(a.seed, set(OMP_FEATURES) - without))
        elif a.lang == "njit-prange":
            print(generate_prange(a.seed, set(PRANGE_FEATURES) - without))
        elif a.lang == "c-mem":
            print(generate_cmem(a.seed, set(ALL_CMEM_FEATURES) - without))
        elif a.lang == "c++-stl":
            print(generate_cxx(a.seed, set(ALL_CXX_FEATURES) - without))
        elif a.lang in ("c", "c-width", "c-nested", "c-ckpt"):
            text = generate_c(a.seed, set(C_FEATURES) - without)
            print({"c-width": with_width_lanes, "c-nested": with_nested}.get(a.lang, str)(text))
        elif a.lang == "jax":
            print(generate_jax(a.seed, set(JAX_FEATURES) - without))
        else:
            print(generate_njit(a.seed, set(NJIT_FEATURES) - without))
        return 0
    if argv and argv[0] == "summary":
        print(summary_from_log(Path(argv[1])))
        return 0
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz", description="zymase fuzz campaign")
    ap.add_argument("--seed", type=int, default=1000)
    ap.add_argument("--count", type=int, default=20)
    ap.add_argument("--lang", choices=["c", "c-width", "c-nested", "c-ckpt", "c-mem", "c++-stl", "njit", "njit-hessian",
                                       "jax", "both", *PAR_LANGS],
                    default="both",
                    help="both: c and njit (jax only when asked); c-width: the C programs with vector forward "
                         "mode (width 3) checked against scalar forward calls too; c-omp: OpenMP programs at "
                         "OMP_NUM_THREADS 1, 2, 4 against the serial build; njit-prange: prange functions at "
                         "Numba threads 1, 2, 4 (gen_par.py); c-nested: the C programs' first derivative "
                         "differentiated again by both modes (second order, gen_c.with_nested); njit-hessian: "
                         "the njit programs' Hessian by every path (check_hessian.py); c-ckpt: the C programs built "
                         "under --tape-limit=1K, their loops checkpointed; c-mem: C programs moving active doubles "
                         "through memory at run-time offsets and lengths (memmove/memcpy windows, realloc-grown "
                         "buffers, char* byte offsets, struct arrays, row copies: gen_cmem.py); c++-stl: C++ programs "
                         "whose arrays are std::vector<double> changed by insert/erase/resize and <algorithm> "
                         "(gen_cxx.py), built with zymase cc -x c++")
    ap.add_argument("--levels", default=",".join(all_levels()),
                    help=f"comma-separated, of {', '.join(all_levels())} (C only)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("fuzz-failures"))
    ap.add_argument("--valgrind-every", type=int, default=10, help="valgrind one C seed in K (0: never)")
    a = ap.parse_args(argv)
    levels = [lv for lv in a.levels.split(",") if lv]
    bad = [lv for lv in levels if lv not in all_levels()]
    if bad:
        ap.error(f"unknown level(s) {bad}; known: {all_levels()}")
    langs = ["c", "njit"] if a.lang == "both" else [a.lang]
    return campaign(a.seed, a.count, langs, levels, a.jobs, a.out, a.valgrind_every)


if __name__ == "__main__":
    sys.exit(main())
