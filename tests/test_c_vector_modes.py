"""Vector (batched) modes from C (issue 25 item 2): ``__enzyme_fwddiff`` and
``__enzyme_autodiff`` with ``enzyme_width, N``, ``enzyme_dupv`` and
``enzyme_dupnoneedv``, checked lane by lane against N separate scalar calls and closed
forms (tests/c/vector: forward_width.c, reverse_width.c), built at -O0 and -O2 (all six
builds with ZYMASE_TEST_ALL_LEVELS=1); the lanes of a chain of scalar ops share its
partials (the operation counts of one stencil's tangent loop). Malformed uses are
refused by name in tests/python/test_cli_errors.py (the width_* and dupv_* cases)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from c_harness import build_and_run, build_ids, builds, emit_llvm, function_ir

PROGRAMS = sorted((Path(__file__).resolve().parent / "c" / "vector").glob("*.c"))
LEVELS = builds("-O0", "-O2")
#: programs that call BLAS link OpenBLAS (as tests/test_c_blas.py's do)
LINK = {"blas_width": ["-lopenblas"]}


@pytest.mark.parametrize("flags", LEVELS, ids=build_ids(LEVELS))
@pytest.mark.parametrize("program", PROGRAMS, ids=[p.stem for p in PROGRAMS])
def test_vector_mode_program(program: Path, flags: list[str], tmp_path: Path, zymase_cli: list[str]):
    build_and_run(program, [*flags, *LINK.get(program.stem, [])], tmp_path, zymase_cli)


STENCIL_COLUMNS = r"""
extern int enzyme_width, enzyme_dupv, enzyme_dupnoneedv, enzyme_const;
extern void __enzyme_fwddiff(void *, ...);
static void poly(const double *x, double *out, long n) {
#pragma clang loop vectorize(disable) interleave(disable) unroll(disable)
    for (long i = 1; i + 1 < n; i++)
        out[i] = x[i - 1] - 2.0 * x[i] + x[i + 1] + 0.1 * x[i] * x[i] * x[i + 1];
}
void columns(const double *x, double *out, const double *s, double *d, long n) {
    __enzyme_fwddiff((void *)poly, enzyme_width, WIDTH, enzyme_dupv, n * 8, x, s, enzyme_dupnoneedv, n * 8, out, d,
                     enzyme_const, n);
}
"""


def test_lanes_share_a_chains_partials(tmp_path: Path, zymase_cli: list[str]):
    """The tangent of ``x[i-1] - 2 x[i] + x[i+1] + 0.1 x[i]^2 x[i+1]`` in each lane is
    ``t[i-1] + a t[i] + b t[i+1]`` with ``a`` and ``b`` computed once for all lanes
    (autodiff/lane_combos.py): 2 multiplications and 2 additions per lane, against 6 and
    5 lane by lane (each product's ``t_a b + a t_b``). Counted as the scalar loop's growth
    from width 4 to width 8 (vectorization and unrolling are off)."""
    counts = {}
    for width in (4, 8):
        src = tmp_path / f"columns{width}.c"
        src.write_text(STENCIL_COLUMNS.replace("WIDTH", str(width)))
        text = emit_llvm(src, ["-O2"], tmp_path, zymase_cli)
        counts[width] = (len(re.findall(r"= fmul ", text)), len(re.findall(r"= f(?:add|sub) ", text)))
    per_lane = [(counts[8][k] - counts[4][k]) / 4 for k in range(2)]
    assert per_lane == [2, 2], f"per lane (fmul, fadd + fsub): {per_lane}; counts by width: {counts}"


def _calls(function_text: str, callee: str) -> int:
    return len(re.findall(rf"call [^\n]*@{re.escape(callee)}\(", function_text))


def test_split_mode_lanes_run_the_primal_once(tmp_path: Path, zymase_cli: list[str]):
    """Split mode at width N (tests/c/vector/split_width.c): the augmented pass runs the
    primal once for all lanes (as many calls of ``exp`` and ``cos`` at widths 2 and 3
    as at width 1), and reverse mode reaches a recursive callee that writes active
    memory through one width-N augmented call and one width-N reverse call, not N."""
    program = Path(__file__).resolve().parent / "c" / "vector" / "split_width.c"
    ll = emit_llvm(program, ["-O0"], tmp_path, zymase_cli)
    for width in ("", "2", "3"):
        aug = function_ir(ll, f"augmented{width}energy")
        assert (_calls(aug, "exp"), _calls(aug, "cos")) == (1, 1), aug
    for width in ("2", "3"):
        caller = function_ir(ll, f"diffe{width}sum_squares_after")
        assert _calls(caller, f"augmented{width}rec_scale") == 1 and _calls(caller, f"diffe{width}rec_scale") == 1
        assert _calls(caller, "augmentedrec_scale") == 0 and _calls(caller, "differec_scale") == 0


def test_blas_lanes_share_the_primal_calls(tmp_path: Path, zymase_cli: list[str]):
    """BLAS at width N (tests/c/vector/blas_width.c): every primal BLAS call once, the
    copies of its inputs the reverse sweep needs made once (as many ``_save`` calls as at
    width 1), and the call's width-1 derivative once per lane (``_fwd``, ``_rev``)."""
    program = Path(__file__).resolve().parent / "c" / "vector" / "blas_width.c"
    ll = emit_llvm(program, ["-O0", "-lopenblas"], tmp_path, zymase_cli)
    primal = ("cblas_dgemv", "cblas_daxpy", "cblas_dscal", "cblas_dgemm", "dgemm_", "cblas_ddot")
    for width in ("", "2", "3"):
        lanes = int(width or 1)
        for kind in ("fwddiffe", "diffe", "augmented"):
            text = function_ir(ll, f"{kind}{width}model")
            assert [_calls(text, f) for f in primal] == [1] * len(primal), (kind, width)
        fwd, rev = function_ir(ll, f"fwddiffe{width}model"), function_ir(ll, f"diffe{width}model")
        assert _calls(fwd, "__zymase_blas_dgemv_fwd") == lanes and _calls(fwd, "__zymase_blas_dgemm_fwd") == 2 * lanes
        assert _calls(rev, "__zymase_blas_dgemv_rev") == lanes and _calls(rev, "__zymase_blas_ddot_rev") == lanes
        assert _calls(rev, "__zymase_blas_dgemm_save") == 2 and _calls(rev, "__zymase_blas_dgemv_save") == 2


CHECKPOINTED_LANES = r"""
#include <stdlib.h>
typedef struct { double d[2]; } vec2;
extern vec2 __enzyme_autodiff(void *, ...);
extern int enzyme_const, enzyme_width;
double decay(double r, int nsteps) {
    double *u = malloc(sizeof(double) * 4);
    for (int i = 0; i < 4; i++) u[i] = 1.0 + i;
    for (int s = 0; s < nsteps; s++)
        for (int i = 0; i < 4; i++) u[i] = u[i] - 1e-2 * r * u[i] * u[i];
    double out = u[0] + u[3];
    free(u);
    return out;
}
int main(int argc, char **argv) {
    (void)argv;
    return __enzyme_autodiff((void *)decay, enzyme_width, 2, 0.5, enzyme_const, 10 * argc).d[0] > 0;
}
"""


def test_checkpointed_loop_lanes_share_one_schedule(tmp_path: Path, zymase_cli: list[str]):
    """Under a tape limit a loop is outlined for checkpointing; at width N its reverse is
    one schedule for all lanes (tests/c/checkpoint/width.c checks the values): the
    width-2 derivative calls the runtime's reverse sweep once, with the width-2
    derivative of the step (through its ``.lanes2`` wrapper), and no width-1 derivative
    of the step is made (not one sweep per lane)."""
    src = tmp_path / "lanes.c"
    src.write_text(CHECKPOINTED_LANES)
    ll = emit_llvm(src, ["-O0", "--tape-limit=1K"], tmp_path, zymase_cli)
    caller = function_ir(ll, "diffe2decay")
    loops = _calls(caller, "__zymase_ckpt_forward")  # (the initializing loop is outlined too)
    assert loops >= 1 and caller.count("@__zymase_ckpt_reverse(") == loops, caller
    wrappers = re.findall(r"^define [^\n]*@(decay\.ckpt[.\d]*\.step\.lanes2)\(", ll, re.M)
    assert len(wrappers) == loops, wrappers
    for wrapper in wrappers:
        assert re.search(rf"ptr @{re.escape(wrapper)}\)", caller), caller
        step = wrapper.removesuffix(".lanes2")
        assert _calls(function_ir(ll, wrapper), f"diffe2{step}") == 1
    assert not re.search(r"^define [^\n]*@diffedecay", ll, re.M)


FWDSPLIT_LANES = r"""
#include <math.h>
typedef struct { void *tape; double value; } augmented;
typedef struct { double d[3]; } vec3;
extern augmented __enzyme_augmentfwd(void *, ...);
extern vec3 __enzyme_fwdsplit(void *, ...);
extern int enzyme_dup, enzyme_const, enzyme_width;
double h(double x, const double *p, double *out, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) {
        out[i] = p[i] * exp(x * i);
        s += out[i] * cos(x * i);
    }
    return s;
}
double lanes(double x, double *p, double *out, double **d, int n) {
    augmented a = __enzyme_augmentfwd((void *)h, enzyme_width, 3, x, enzyme_dup, p, d[0], d[1], d[2], enzyme_dup,
                                      out, d[3], d[4], d[5], enzyme_const, n);
    vec3 t = __enzyme_fwdsplit((void *)h, enzyme_width, 3, x, 1.0, 0.5, 0.25, enzyme_dup, p, d[0], d[1], d[2],
                               enzyme_dup, out, d[3], d[4], d[5], enzyme_const, n, a.tape);
    return t.d[0] + t.d[1] + t.d[2];
}
"""


def test_split_forward_mode_lanes_run_the_primal_once(tmp_path: Path, zymase_cli: list[str]):
    """Split forward mode at width N (tests/c/vector/fwdsplit_width.c checks the values):
    the augmented pass runs the primal once for all lanes (one ``exp`` and one ``cos``
    call at width 3), and the tangent function reads the primal from the one tape instead
    of running it again (no ``exp`` or ``cos``), while returning 3 tangents."""
    src = tmp_path / "fwdsplit_lanes.c"
    src.write_text(FWDSPLIT_LANES)
    ll = emit_llvm(src, ["-O0"], tmp_path, zymase_cli)
    aug = function_ir(ll, "augmented3h")
    assert (_calls(aug, "exp"), _calls(aug, "cos")) == (1, 1), aug
    tangent = function_ir(ll, "fwdsplit3h")
    assert (_calls(tangent, "exp"), _calls(tangent, "cos")) == (0, 0), tangent
    assert tangent.startswith("define internal { double, double, double } @"), tangent.splitlines()[0]
