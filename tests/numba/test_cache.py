"""The on-disk kernel cache: a second process loads the kernel instead of
differentiating again, and gets the same derivative."""

import json
import os
import subprocess
import sys
import textwrap


def _run(tmp_path, cache_dir):
    script = tmp_path / "prog.py"
    env = dict(os.environ, ZYMASE_CACHE_DIR=str(cache_dir), PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_loads_kernel_from_disk(tmp_path):
    """A second process loads the kernel instead of differentiating again. A kernel entry
    cut short (a full disk, a crash while copying the cache) fails its checksum: the
    kernel is differentiated again, never loaded from it (issue 29 item 3). A changed
    function misses the cache. One sequence of processes checks all three (the suite's
    time: each process imports Numba and the engine)."""
    src = textwrap.dedent("""
        import json, math
        import numpy as np
        from numba import njit
        import zymase

        @njit
        def f(x, a):
            s = 0.0
            for i in range(x.shape[0]):
                s += math.exp(a * x[i]) * SCALE
            return s

        g = zymase.grad(f, argnums=(0, 1), cache=True)
        gx, ga = g(np.linspace(0, 1, 4), 0.5)
        rec = zymase.stats()[-1]
        print(json.dumps({"gx": list(gx), "ga": ga, "cached": rec.cached, "phases": sorted(rec.phases)}))
    """)
    (tmp_path / "prog.py").write_text(src.replace("SCALE", "1.0"))
    cache = tmp_path / "cache"
    first = _run(tmp_path, cache)
    assert first["cached"] == "" and "AD" in first["phases"]
    assert len(list(cache.glob("*.ll"))) == 1
    second = _run(tmp_path, cache)
    assert second["cached"] == "disk" and "AD" not in second["phases"]
    assert second["gx"] == first["gx"] and second["ga"] == first["ga"]
    x = [0, 1 / 3, 2 / 3, 1]
    import math

    assert abs(first["ga"] - sum(v * math.exp(0.5 * v) for v in x)) < 1e-12

    (entry,) = cache.glob("*.ll")
    entry.write_bytes(entry.read_bytes()[: entry.stat().st_size // 2])
    rebuilt = _run(tmp_path, cache)
    assert rebuilt["cached"] == "" and "AD" in rebuilt["phases"] and rebuilt["ga"] == first["ga"]

    (tmp_path / "prog.py").write_text(src.replace("SCALE", "2.0"))
    changed = _run(tmp_path, cache)
    assert changed["cached"] == "" and "AD" in changed["phases"]
    assert abs(changed["ga"] - 2 * first["ga"]) < 1e-12


def test_cache_key_changes_with_the_engine(tmp_path):
    """A kernel cached by another version of zymase's code (same ``__version__``) is
    not loaded: an engine fix must reach users who cached the old derivative.
    Guards issue 23 item 5 (the key covered ``zymase.__version__`` only)."""
    import shutil

    import zymase

    engine = tmp_path / "engine"
    shutil.copytree(os.path.dirname(zymase.__file__), engine / "zymase",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import json
        from numba import njit
        import zymase

        @njit
        def f(a):
            return a ** 3

        print(json.dumps({"g": zymase.grad(f, cache=True)(2.0), "cached": zymase.stats()[-1].cached,
                          "engine": zymase.__file__}))
    """))
    cache = tmp_path / "cache"

    def run():
        env = dict(os.environ, ZYMASE_CACHE_DIR=str(cache),
                   PYTHONPATH=os.pathsep.join([str(engine), *sys.path]))
        out = subprocess.run([sys.executable, str(tmp_path / "prog.py")], capture_output=True, text=True,
                             env=env, timeout=300)
        assert out.returncode == 0, out.stderr
        r = json.loads(out.stdout.strip().splitlines()[-1])
        assert r.pop("engine").startswith(str(engine))
        return r

    assert run() == {"g": 12.0, "cached": ""}
    # an edit anywhere in the engine's sources (here a comment in reverse mode)
    with open(engine / "zymase" / "autodiff" / "reverse.py", "a") as f:
        f.write("\n# an engine fix\n")
    assert run() == {"g": 12.0, "cached": ""}
    assert run() == {"g": 12.0, "cached": "disk"}
