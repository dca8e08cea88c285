"""The README's Python example runs as written and recovers the true parameters; it is
the same code as examples/fit_ode.py."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _readme_block() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Python (Numba) example"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_example_is_examples_fit_ode():
    example = (ROOT / "examples" / "fit_ode.py").read_text()
    assert _readme_block() == example[example.index("import numpy"):]


def test_readme_example_fits_the_parameters(tmp_path):
    script = tmp_path / "fit.py"
    script.write_text(_readme_block())
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": __import__("os").pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr
    m = re.search(r"fitted k, c, f: \[\s*([-\d.e]+)\s+([-\d.e]+)\s+([-\d.e]+)\]", out.stdout)
    assert m, out.stdout
    k, c, f = map(float, m.groups())
    assert abs(k - 4.0) < 1e-3 and abs(c - 0.3) < 1e-3 and abs(f - 0.5) < 1e-3
