"""numba-mpi (issue 27 item 3, Python side): njit functions that call MPI through the
`numba-mpi` package get the C path's MPI rules. tests/numba/mpi_ranks.py holds the
functions (allreduce and bcast; a ring of sendrecv; a sendrecv from MPI_ANY_SOURCE
that must be refused naming numba_mpi.sendrecv; send/recv with `--all`, outside the suite); it runs under `mpirun -np 2`
with a timeout (a derivative message without its partner must fail, not hang), every rank
checking its part of the global gradient against the closed form. One script for every
case: each rank compiles with Numba, which is most of the CPU time."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from test_c_mpi import run_mpi

# numba-mpi is the optional extra `mpi` (.ci/run installs it). It is not imported here:
# importing it starts MPI in the pytest process, whose mpirun then fails
pytestmark = [
    pytest.mark.skipif(importlib.util.find_spec("numba_mpi") is None,
                       reason="numba-mpi is not installed (pip install 'zymase[mpi]')"),
    pytest.mark.skipif(shutil.which("mpirun") is None,
                       reason="Open MPI is not installed (apt-get install openmpi-bin libopenmpi-dev)"),
]

SCRIPT = Path(__file__).resolve().parent / "mpi_ranks.py"
MPI_TIMEOUT = 300  # both ranks compile three kernels on a shared machine


def test_numba_mpi_gradients_on_two_ranks(tmp_path: Path):
    launcher = tmp_path / "ranks.sh"  # run_mpi starts an executable: the script under this Python
    launcher.write_text(f"#!/bin/sh\nexec '{sys.executable}' '{SCRIPT}'\n")
    launcher.chmod(0o755)
    run = run_mpi(launcher, 2, MPI_TIMEOUT)
    assert run is not None, f"mpirun -np 2 {SCRIPT.name} did not finish in {MPI_TIMEOUT} s"
    # the ranks' lines may interleave: count the reports, not the lines
    assert run.returncode == 0 and "FAIL" not in run.stdout, run.stdout + run.stderr[-3000:]
    for case in ("collectives", "ring", "refusal any source"):
        assert run.stdout.count(f"ok {case} rank") == 2, (case, run.stdout)
