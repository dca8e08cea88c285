"""The same input gives the same derivative code, whatever Python's hash seed: nothing
the generated IR depends on may be ordered by iterating a set of IR objects (they hash
by identity). Differing output made A/B measurements of two builds compare two
different layouts of the same code."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zymase.bench.cases import WORKLOAD_DIR, WORKLOADS


@pytest.mark.parametrize("name", ["gmm", "lstm"])
def test_derivative_ir_does_not_depend_on_the_hash_seed(tmp_path, name):
    w = WORKLOADS[name]
    outs = []
    for seed in ("1", "2"):  # two seeds, two full builds each workload (the suite's time)
        out = tmp_path / f"{name}.{seed}.ll"
        cmd = [sys.executable, "-m", "zymase.cli", "cc", "-O2", "--no-cache", "-S", "-emit-llvm", *w.flags,
               "-I", str(WORKLOAD_DIR), str(w.source), "-o", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        assert proc.returncode == 0, proc.stderr
        outs.append(out.read_text())
    assert outs[0] == outs[1]
