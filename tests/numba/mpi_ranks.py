"""Run under `mpirun -np N` by tests/numba/test_numba_mpi.py (issue 27 item 3, Python side):
njit functions that call MPI through numba-mpi, differentiated by zymase.grad on every
rank. The global function is the sum of the ranks' results (each rank seeds its own
result); each rank checks its part of the global gradient against the closed form, prints
`ok <case>` or `FAIL <case> ...`, and then checks the refusal of a receive from
MPI_ANY_SOURCE. `--all` adds send/recv, isend/irecv/wait, allreduce with MAX and MIN (the
extremes on different ranks element by element), allgather and gather, scatter, two
irecv/isend pairs per rank completed by one waitall, two chained isend/irecv exchanges, and
the refusal of numba_mpi.test (the suite leaves them out for CPU time: Numba compiles
numba-mpi's functions again for every function that calls them, some 5 s per case and rank):
`mpirun --allow-run-as-root --oversubscribe -np 2 python tests/numba/mpi_ranks.py --all`."""

import sys

import numba
import numba_mpi as mpi
import numpy as np

import zymase
from zymase.errors import ZymaseError

RANK, SIZE = mpi.rank(), mpi.size()
N = 4
failed = 0


def x_of(r):
    return 0.5 + r + 0.25 * np.arange(N)


def a_of(r):
    return r + np.arange(N) + 1.0


@numba.njit
def collectives(x):
    # MPI_Allreduce (sum) of x * x, then MPI_Bcast of rank 0's x
    r = mpi.rank()
    y = np.empty_like(x)
    mpi.allreduce(x * x, y)
    b = x.copy()
    mpi.bcast(b, 0)
    s = 0.0
    for i in range(x.size):
        s += (i + 1.0) * y[i] + (r + 1.0) * (i + 1.0) * b[i] * b[i]
    return s


@numba.njit
def ring(x, a):
    # a ring of MPI_Sendrecv: x to the next rank, the previous rank's x received
    r, n = mpi.rank(), mpi.size()
    y = np.empty_like(x)
    mpi.sendrecv(x, (r + 1) % n, y, (r - 1) % n, 5, 5)
    return np.sum(a * x * y)


@numba.njit
def send_recv(x):
    # rank 0 sends x * x to rank 1 with MPI_Send / MPI_Recv
    r = mpi.rank()
    if r == 0:
        mpi.send(x * x, 1, 3)
        return np.sum(x)
    if r == 1:
        z = np.empty_like(x)
        mpi.recv(z, 0, 3)
        return np.sum(z * x)
    return np.sum(x)


@numba.njit
def nonblocking(x):
    # rank r posts MPI_Irecv from the previous rank, MPI_Isend of x * x to the next, waits
    r, n = mpi.rank(), mpi.size()
    y = np.empty_like(x)
    _, rq = mpi.irecv(y, (r - 1) % n, 7)
    _, sq = mpi.isend(x * x, (r + 1) % n, 7)
    mpi.wait(sq)
    mpi.wait(rq)
    return np.sum(y * x)


@numba.njit
def extremes(x):
    # MPI_Allreduce with MPI_MAX of x * x and with MPI_MIN of x: the adjoint goes to the
    # rank that held the extreme element (the arg-max taped by the rule)
    y = np.empty_like(x)
    z = np.empty_like(x)
    mpi.allreduce(x * x, y, mpi.Operator.MAX)
    mpi.allreduce(x, z, mpi.Operator.MIN)
    s = 0.0
    for i in range(x.size):
        s += (i + 1.0) * y[i] + (i + 2.0) * z[i]
    return s


@numba.njit
def gathers(x):
    # MPI_Allgather of x * x to every rank, MPI_Gather of x to rank 0
    r, n = mpi.rank(), mpi.size()
    g = np.zeros(n * x.size)
    mpi.allgather(x * x, g, x.size)
    h = np.zeros(n * x.size)
    mpi.gather(x, h, x.size, 0)
    s = 0.0
    for k in range(g.size):
        s += (r + 1.0) * (k + 1.0) * g[k]
    if r == 0:
        for k in range(h.size):
            s += (k + 1.0) * h[k] * h[k]
    return s + np.sum(x)


@numba.njit
def scatters(x):
    # MPI_Scatter of rank 0's buffer (x scaled, size * N elements): rank r gets part r
    r, n = mpi.rank(), mpi.size()
    src = np.empty(n * x.size)
    for k in range(src.size):
        src[k] = x[k % x.size] * (k + 1.0)
    part = np.empty(x.size)
    mpi.scatter(src, part, x.size, 0)
    return (r + 1.0) * np.sum(part * part) + np.sum(x)


@numba.njit
def halo_waitall(x):
    # both neighbours at once: two MPI_Irecv and two MPI_Isend completed by one MPI_Waitall
    r, n = mpi.rank(), mpi.size()
    left = np.empty_like(x)
    right = np.empty_like(x)
    sq = x * x
    reqs = np.empty(4, dtype=mpi.RequestType)
    _, q = mpi.irecv(left, (r - 1) % n, 21)
    reqs[0] = q[0]
    _, q = mpi.irecv(right, (r + 1) % n, 22)
    reqs[1] = q[0]
    _, q = mpi.isend(sq, (r + 1) % n, 21)
    reqs[2] = q[0]
    _, q = mpi.isend(x, (r - 1) % n, 22)
    reqs[3] = q[0]
    mpi.waitall(reqs)
    return np.sum(left * x) + np.sum((r + 1.0) * right * right)


@numba.njit
def isend_irecv_pairs(x):
    # two exchanges in a row with MPI_Isend / MPI_Irecv, each waited with MPI_Wait: the
    # second sends what the first received, so the adjoint messages must come back in order
    r, n = mpi.rank(), mpi.size()
    a = np.empty_like(x)
    _, rq = mpi.irecv(a, (r - 1) % n, 31)
    _, sq = mpi.isend(x * x, (r + 1) % n, 31)
    mpi.wait(rq)
    mpi.wait(sq)
    b = np.empty_like(x)
    c = 2.0 * a
    _, rq2 = mpi.irecv(b, (r - 1) % n, 32)
    _, sq2 = mpi.isend(c, (r + 1) % n, 32)
    mpi.wait(sq2)
    mpi.wait(rq2)
    return np.sum(b * x) + np.sum(a)


@numba.njit
def completed_by_test(x):
    # MPI_Test has no rule (the derivative message is completed at the wait): refused
    y = np.empty_like(x)
    _, rq = mpi.irecv(y, (mpi.rank() - 1) % mpi.size(), 7)
    while not mpi.test(rq)[1]:
        pass
    return np.sum(y * x)


@numba.njit
def sendrecv_any_source(x):
    # numba_mpi.sendrecv receives from MPI_ANY_SOURCE unless told otherwise: refused
    y = np.empty_like(x)
    mpi.sendrecv(x, (mpi.rank() + 1) % mpi.size(), y)
    return np.sum(y * x)


def check(case, got, want):
    global failed
    if np.allclose(got, want, rtol=1e-12, atol=1e-12):
        print(f"ok {case} rank {RANK}")
    else:
        failed += 1
        print(f"FAIL {case} rank {RANK}: got {got}, want {want}")


xs = [x_of(r) for r in range(SIZE)]
x, i1 = xs[RANK], np.arange(N) + 1.0
want = SIZE * 2 * x * i1  # allreduce: every rank's result depends on x
if RANK == 0:  # bcast: every rank's result depends on rank 0's x
    want = want + sum(r + 1.0 for r in range(SIZE)) * 2 * i1 * x
check("collectives", zymase.grad(collectives)(x), want)
nxt, prv = (RANK + 1) % SIZE, (RANK - 1) % SIZE
check("ring", zymase.grad(ring, argnums=0)(x, a_of(RANK)), a_of(RANK) * xs[prv] + a_of(nxt) * xs[nxt])
if "--all" in sys.argv:  # Numba's compile of send and recv doubles the CPU time: not in the suite
    want = {0: 1 + 2 * xs[0] * xs[1], 1: xs[0] ** 2}.get(RANK, np.ones(N))
    check("send/recv", zymase.grad(send_recv)(x), want)
    check("isend/irecv/wait", zymase.grad(nonblocking)(x), xs[prv] ** 2 + 2 * x * xs[nxt])
    # points whose maxima and minima sit on different ranks element by element
    xm = [0.5 + (r + np.arange(N)) % SIZE + 0.1 * np.arange(N) for r in range(SIZE)]
    top, bottom = np.argmax(xm, axis=0), np.argmin(xm, axis=0)
    want = SIZE * (np.where(top == RANK, 2 * xm[RANK] * i1, 0) + np.where(bottom == RANK, i1 + 1, 0))
    check("allreduce max/min", zymase.grad(extremes)(xm[RANK]), want)
    k = RANK * N + np.arange(N) + 1.0  # the positions of this rank's elements, 1-based
    check("allgather/gather", zymase.grad(gathers)(x), SIZE * (SIZE + 1) / 2 * k * 2 * x + 1 + 2 * k * x)
    want = np.ones(N)
    if RANK == 0:
        want = want + sum((r + 1.0) * 2 * x * (r * N + np.arange(N) + 1.0) ** 2 for r in range(SIZE))
    check("scatter", zymase.grad(scatters)(x), want)
    # left = x_prv ** 2, right = x_nxt: d/dx of sum(left_nxt * x_nxt) + sum((prv + 1) right_prv ** 2)
    check("isend/irecv/waitall", zymase.grad(halo_waitall)(x),
          xs[prv] ** 2 + 2 * x * xs[nxt] + 2 * (prv + 1.0) * x)
    # a = x_prv ** 2, b = 2 a_prv = 2 x_{r-2} ** 2; F = sum_r sum(b_r x_r) + sum(a_r)
    nn = (RANK + 2) % SIZE
    check("isend/irecv pairs", zymase.grad(isend_irecv_pairs)(x), 2 * xs[(RANK - 2) % SIZE] ** 2 + 4 * x * xs[nn] + 2 * x)

refusals = [("any source", sendrecv_any_source, ("'numba_mpi.sendrecv' (MPI_Sendrecv)", "MPI_ANY_SOURCE"))]
if "--all" in sys.argv:
    refusals.append(("no rule", completed_by_test, ("'numba_mpi.test' (MPI_Test)",)))
for case, fn, words in refusals:
    try:
        zymase.grad(fn)(x)
        message = "no error"
    except ZymaseError as err:
        message = str(err)
    if message.startswith("zymase: error:") and all(w in message for w in words) and "\n" not in message:
        print(f"ok refusal {case} rank {RANK}")
    else:
        failed += 1
        print(f"FAIL refusal {case} rank {RANK}: {message}")
sys.exit(1 if failed else 0)
