#!/usr/bin/env python3
"""Build and run the bench/workloads programs with `zymase cc -O2`; print a Markdown table.

Each workload runs in its own process and prints one JSON line (primal time, gradient time,
ratio, largest relative error of checked gradient entries against finite differences).

    python bench/run.py [--quick] [--json FILE] [--only NAME ...] [--zymase CMD]
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOADS = os.path.join(HERE, "workloads")

# name -> (extra compile flags, list of argument lists: full run, quick run)
CASES = {
    # -fno-math-errno: without it sqrt may write errno, so mag() is not readonly and LICM
    # cannot hoist it out of the loop (the gradient would be O(n^2)).
    "normalize": (["-fno-math-errno"],
                  [["1000"], ["10000"], ["100000"]],
                  [["1000"], ["100000"]]),
    "gmm": ([],
            [["2", "5", "1000"], ["10", "25", "1000"], ["20", "50", "1000"],
             ["2", "5", "10000"], ["10", "25", "10000"], ["20", "50", "10000"]],
            [["2", "5", "1000"], ["10", "25", "1000"]]),
    "ba": ([], [[]], [[]]),
    "lstm": ([], [["2", "1024"], ["4", "1024"]], [["2", "1024"]]),
    "ode": ([], [["100", "10000"]], [["100", "10000"]]),
    "fft": ([], [["1024"]], [["1024"]]),
}


def fmt_time(s):
    if s is None:
        return "-"
    if s < 1e-3:
        return "%.1f us" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3)
    return "%.2f s" % s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer sizes, shorter timing batches")
    ap.add_argument("--json", metavar="FILE", help="write the results as a JSON list")
    ap.add_argument("--only", nargs="*", help="run only these workloads")
    ap.add_argument("--zymase", default="zymase", help="zymase command (default: zymase)")
    args = ap.parse_args()

    env = dict(os.environ)
    if args.quick:
        env.setdefault("BENCH_MIN_S", "0.05")
        env.setdefault("BENCH_REPEATS", "2")
    names = [n for n in CASES if not args.only or n in args.only]
    results = []
    failed = False
    with tempfile.TemporaryDirectory(prefix="zymase-bench-") as tmp:
        for name in names:
            src = os.path.join(WORKLOADS, name + ".c")
            if not os.path.exists(src):
                continue
            flags, full, quick = CASES[name]
            exe = os.path.join(tmp, name)
            cmd = shlex.split(args.zymase) + ["cc", "-O2"] + flags + [src, "-o", exe, "-lm"]
            t0 = time.monotonic()
            p = subprocess.run(cmd, capture_output=True, text=True)
            compile_s = time.monotonic() - t0
            if p.returncode != 0:
                print("build failed: %s\n%s" % (" ".join(cmd), p.stderr[-2000:]), file=sys.stderr)
                results.append({"workload": name, "size": "-", "error": "build failed"})
                failed = True
                continue
            for argv in (quick if args.quick else full):
                p = subprocess.run([exe] + argv, capture_output=True, text=True, env=env)
                line = next((l for l in p.stdout.splitlines() if l.startswith("{")), None)
                r = json.loads(line) if line else {"workload": name, "size": " ".join(argv)}
                r["compile_s"] = round(compile_s, 2)
                if p.returncode != 0:
                    r["error"] = (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
                    failed = True
                    print("%s %s: %s" % (name, " ".join(argv), r["error"]), file=sys.stderr)
                results.append(r)
                print("  %s %s done" % (name, r.get("size")), file=sys.stderr)

    print("| workload | size | primal | gradient | gradient / primal | max rel. err. vs FD | compile |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        ratio = "%.2f" % r["ratio"] if "ratio" in r else "-"
        err = "%.1e" % r["max_rel_err_fd"] if "max_rel_err_fd" in r else "-"
        if "error" in r:
            err += " (FAIL)"
        print("| %s | %s | %s | %s | %s | %s | %s |" % (
            r["workload"], r.get("size", "-"), fmt_time(r.get("primal_s")), fmt_time(r.get("grad_s")),
            ratio, err, "%.1f s" % r["compile_s"] if "compile_s" in r else "-"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
