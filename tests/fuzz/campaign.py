"""Fuzz campaigns: many seeds, each C program built at every requested level (njit and
JAX programs checked once), outcomes counted, every failing program written out with the
driver output, so that ``python -m tests.fuzz reduce`` can shrink it.

C builds run in a thread pool (each is a ``zymase cc`` subprocess); njit and JAX programs
run in worker processes (``python -m tests.fuzz.check_njit`` / ``check_jax``) that report
one JSON line per seed, so that a crashing program is recorded and the campaign goes on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .check_c import CKPT_FLAGS, CXX_FLAGS, LEVELS, Outcome, check_c_source
from .check_par import PRANGE_LEVEL, THREADS, check_omp_source
from .gen_c import generate_c, with_nested, with_width_lanes
from .gen_cmem import generate_cmem
from .gen_cxx import generate_cxx
from .gen_jax import generate_jax
from .gen_njit import generate_njit
from .gen_par import generate_omp, generate_prange

REPO_ROOT = Path(__file__).resolve().parents[2]
FAILING = ("wrong", "crashed")


def failure_header(lang: str, seed: int, o: Outcome) -> str:
    """The first line of a written failure: what the reducer and corpus test read back."""
    info = {"lang": lang, "seed": seed, "level": o.level, "kind": o.kind, "valgrind": o.valgrind,
            "detail": o.detail[:400]}
    text = json.dumps(info)
    return f"/* fuzz-failure: {text} */\n" if lang.startswith("c") else f"# fuzz-failure: {text}\n"


def read_header(text: str) -> dict | None:
    first = text.split("\n", 1)[0]
    for prefix, suffix in (("/* fuzz-failure: ", " */"), ("# fuzz-failure: ", "")):
        if first.startswith(prefix):
            return json.loads(first[len(prefix):len(first) - len(suffix)])
    return None


def write_failure(outdir: Path, lang: str, seed: int, text: str, o: Outcome) -> Path:
    outdir.mkdir(parents=True, exist_ok=True)
    ext = "cpp" if lang == "c++-stl" else "c" if lang.startswith("c") else "py"
    path = outdir / f"{lang}-seed{seed}-{o.level}{'-valgrind' if o.valgrind else ''}.{ext}"
    path.write_text(failure_header(lang, seed, o) + text)
    path.with_suffix(".out").write_text(f"{o.kind}: {o.detail}\n\n{o.output}")
    return path


def run_c(seeds, levels, jobs, valgrind_every, features=None, on_result=None, lang="c"):
    """[(seed, Outcome)] for every seed at every level (one extra valgrind run per
    ``valgrind_every`` seeds, at the first level, when that level was right; ``lang``
    c-omp: OpenMP programs, gen_par/check_par, never under valgrind; c-width: the C programs
    with vector forward mode's lanes checked too, gen_c.with_width_lanes; c-nested: their
    first derivative differentiated again, gen_c.with_nested; c-ckpt: the C programs built
    under a small tape limit, check_c.CKPT_FLAGS; c-mem: gen_cmem's memory idioms; c++-stl: gen_cxx's C++, built as C++)."""
    tasks = [(s, lv) for s in seeds for lv in levels]

    def one(task):
        s, lv = task
        if lang == "c-omp":
            text = generate_omp(s, features)
            results = [(s, check_omp_source(text, lv), text)]
            for r in results:
                if on_result:
                    on_result(lang, *r)
            return results
        text = {"c-mem": generate_cmem, "c++-stl": generate_cxx}.get(lang, generate_c)(s, features)
        if lang == "c-width":
            text = with_width_lanes(text)
        elif lang == "c-nested":
            text = with_nested(text)
        flags = {"c-ckpt": CKPT_FLAGS, "c++-stl": CXX_FLAGS}.get(lang, ())
        o = check_c_source(text, lv, extra=flags)
        results = [(s, o, text)]
        if valgrind_every and s % valgrind_every == 0 and lv == levels[0] and o.kind == "right":
            results.append((s, check_c_source(text, lv, valgrind=True, extra=flags), text))
        for r in results:
            if on_result:
                on_result(lang, *r)
        return results

    out = []
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        for rs in ex.map(one, tasks):
            out += rs
    return out


# the worker module and generator of the languages checked in worker processes
WORKERS = {"njit": "tests.fuzz.check_njit", "jax": "tests.fuzz.check_jax", "njit-prange": "tests.fuzz.check_par",
           "njit-hessian": "tests.fuzz.check_hessian"}
GENERATORS = {"njit": generate_njit, "jax": generate_jax, "njit-prange": generate_prange,
              "njit-hessian": generate_njit}


def _njit_worker(seeds, features, on_result, results, lang="njit"):
    """Check ``seeds`` in worker processes, restarting after a worker dies (``lang``
    njit-prange: check_par's worker, with Numba allowed 4 threads)."""
    pending = list(seeds)
    level = PRANGE_LEVEL if lang == "njit-prange" else lang  # njit, jax, njit-hessian
    while pending:
        cmd = [sys.executable, "-m", WORKERS[lang], *map(str, pending)]
        if features is not None:
            cmd += ["--features", ",".join(sorted(features))]
        env = dict(os.environ)
        if lang == "njit-prange":
            env["NUMBA_NUM_THREADS"] = str(max(THREADS))
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT, env=env)
        done = set()
        for line in proc.stdout:
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            o = Outcome(rec["kind"], level, rec["detail"], rec["output"])
            done.add(rec["seed"])
            results.append((rec["seed"], o, None))
            if on_result:
                on_result(lang, rec["seed"], o, None)
        err = proc.stderr.read()
        proc.wait()
        pending = [s for s in pending if s not in done]
        if pending:  # the worker died on pending[0]
            s = pending.pop(0)
            o = Outcome("crashed", level, f"{lang} worker died (exit {proc.returncode}): {err.strip()[-300:]}", err)
            results.append((s, o, None))
            if on_result:
                on_result(lang, s, o, None)


def run_njit(seeds, jobs, features=None, on_result=None, lang="njit"):
    """[(seed, Outcome)] of njit (or, with lang="jax"/"njit-prange", JAX or prange) programs, in ``jobs`` workers."""
    seeds = list(seeds)
    chunks = [seeds[i::max(1, jobs)] for i in range(max(1, jobs))]
    results: list = []
    threads = [threading.Thread(target=_njit_worker, args=(c, features, on_result, results, lang))
               for c in chunks if c]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def summary(results) -> str:
    """A table: outcomes per level, then refusals and failures by (normalized) message."""
    by_level: dict[str, Counter] = {}
    refusals: Counter = Counter()
    failures: Counter = Counter()
    notes: Counter = Counter()
    checkpointed: Counter = Counter()  # --lang c-ckpt: builds that checkpointed a loop, of those built
    for _, o, _ in results:
        lv = o.level + (" valgrind" if o.valgrind else "")
        if "checkpointed" in o.extra:
            checkpointed[lv, o.extra["checkpointed"]] += 1
        by_level.setdefault(lv, Counter())[o.kind] += 1
        if o.kind == "refused":
            refusals[o.message_class] += 1
        elif o.kind in FAILING:
            failures[f"{o.kind}: {o.detail[:90]}"] += 1
        elif o.kind == "right" and o.detail:  # a right outcome with a note (JAX's oracle was wrong)
            notes[o.detail[:90]] += 1
    kinds = ["right", "refused", "wrong", "crashed", "invalid"]
    rows = [f"{'level':<22}" + "".join(f"{k:>9}" for k in kinds) + f"{'total':>9}"]
    total = Counter()
    for lv in sorted(by_level):
        c = by_level[lv]
        total.update(c)
        rows.append(f"{lv:<22}" + "".join(f"{c[k]:>9}" for k in kinds) + f"{sum(c.values()):>9}")
    rows.append(f"{'all':<22}" + "".join(f"{total[k]:>9}" for k in kinds) + f"{sum(total.values()):>9}")
    if checkpointed:
        rows.append("\nbuilt with a checkpointed loop (of those built):")
        for lv in sorted({lv for lv, _ in checkpointed}):
            yes, no = checkpointed[lv, True], checkpointed[lv, False]
            rows.append(f"  {lv:<20}{yes:>5} of {yes + no}")
    if refusals:
        rows.append("\nrefusals by message:")
        rows += [f"  {n:>4}  {m}" for m, n in refusals.most_common()]
    if failures:
        rows.append("\nfailures:")
        rows += [f"  {n:>4}  {m}" for m, n in failures.most_common()]
    if notes:
        rows.append("\nright, with a note:")
        rows += [f"  {n:>4}  {m}" for m, n in notes.most_common()]
    return "\n".join(rows)


def campaign(seed: int, count: int, langs, levels, jobs: int, outdir: Path, valgrind_every: int = 10) -> int:
    seeds = range(seed, seed + count)
    lock = threading.Lock()
    written = []

    outdir.mkdir(parents=True, exist_ok=True)
    log = (outdir / "results.jsonl").open("a")

    def on_result(lang, s, o, text):
        with lock:
            log.write(json.dumps({"lang": lang, "seed": s, "level": o.level, "kind": o.kind, "valgrind": o.valgrind,
                                  "detail": o.detail, **o.extra}) + "\n")
            log.flush()
            where = f"{o.level}{' valgrind' if o.valgrind else ''}"
            print(f"[{lang} seed {s} {where}] {o.kind} {o.detail[:150]}".rstrip(), flush=True)
            if o.kind in FAILING:
                src = text if text is not None else GENERATORS[lang](s)
                written.append(write_failure(outdir, lang, s, src, o))

    results = []
    if "c" in langs:
        results += run_c(seeds, levels, jobs, valgrind_every, on_result=on_result)
    if "njit" in langs:
        results += run_njit(seeds, jobs, on_result=on_result)
    if "jax" in langs:
        results += run_njit(seeds, jobs, on_result=on_result, lang="jax")
    if "c-omp" in langs:
        results += run_c(seeds, levels, jobs, 0, on_result=on_result, lang="c-omp")
    if "c-width" in langs:
        results += run_c(seeds, levels, jobs, 0, on_result=on_result, lang="c-width")
    if "njit-prange" in langs:
        results += run_njit(seeds, jobs, on_result=on_result, lang="njit-prange")
    if "c-nested" in langs:
        results += run_c(seeds, levels, jobs, valgrind_every, on_result=on_result, lang="c-nested")
    if "c-ckpt" in langs:
        results += run_c(seeds, levels, jobs, valgrind_every, on_result=on_result, lang="c-ckpt")
    if "c-mem" in langs:
        results += run_c(seeds, levels, jobs, valgrind_every, on_result=on_result, lang="c-mem")
    if "c++-stl" in langs:
        results += run_c(seeds, levels, jobs, valgrind_every, on_result=on_result, lang="c++-stl")
    if "njit-hessian" in langs:
        results += run_njit(seeds, jobs, on_result=on_result, lang="njit-hessian")
    log.close()
    print()
    print(summary(results))
    print(f"\n{len(written)} failing program(s) written to {outdir}")
    for p in written:
        print(f"  {p}")
    return 1 if written else 0


def summary_from_log(path: Path) -> str:
    """The summary table of a campaign's results.jsonl (also of an interrupted one)."""
    results = []
    for line in path.read_text().splitlines():
        r = json.loads(line)
        extra = {"checkpointed": r["checkpointed"]} if "checkpointed" in r else {}
        results.append((r["seed"], Outcome(r["kind"], r["level"], r["detail"], valgrind=r["valgrind"], extra=extra),
                        None))
    return summary(results)


def all_levels() -> list[str]:
    return list(LEVELS)
