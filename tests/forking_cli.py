"""Running the ``zymase`` command line in tests without paying Python start-up per call.

A build of a small C program takes about 1.3 s, of which 0.7 s is starting Python and
importing xDSL and llvmlite; the suite makes well over a thousand such calls. So each
pytest process starts one server (this file run as a script) that imports zymase once
and then forks a fresh child per command: the child runs ``zymase.cli.main`` (or
``opt_main``) with its own working directory, environment, stdin and output files, exactly
as a separate process would, and the server reports its exit code and output. Children
never share state with each other: each is a copy of the freshly imported server.

``run_cli`` has the signature the tests need from ``subprocess.run``. Set
ZYMASE_TEST_SUBPROCESS=1 to run every command as a real process instead (the console
script), e.g. to rule the server out when a test fails strangely.
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SERVER_SCRIPT = Path(__file__).resolve()

# What a `zymase cc` / `zymase opt` / `zymase-opt` run imports, loaded once by the server.
PRELOAD = (
    "zymase.cli",
    "zymase.frontends.c",
    "zymase.llvm.reader",
    "zymase.llvm.writer",
    "zymase.transforms.enzyme_pass",
    "zymase.transforms.pipeline",
    "zymase.autodiff.driver",
    # imported by the engine on first use, which the warm-up program does not reach: in
    # every child that needed them they were compiled again (the suite's environment
    # writes no bytecode): the runtimes' descriptions (the tape runtime, memcpy adjoints:
    # about 0.09 s of CPU, in three builds of five of tests/c and tests/c/memory), type
    # analysis (in every build, 0.01 s) and the prange and struct-field analyses
    "zymase.runtime_ops",
    "zymase.runtime_ops_data",
    "zymase.analysis.types",
    "zymase.analysis.struct_fields",
    "zymase.autodiff.numba_parfor",
)


def _console_script(name: str) -> list[str]:
    beside = Path(sys.executable).parent / name
    if beside.is_file():
        return [str(beside)]
    module_main = "main" if name == "zymase" else "opt_main"
    return [sys.executable, "-c", f"import sys; from zymase.cli import {module_main}; sys.exit({module_main}())"]


class _Server:
    """One server process per thread that runs commands (a pytest process has one; the
    fuzz campaign runs builds from several threads, each with its own server)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [sys.executable, str(SERVER_SCRIPT)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            )
        return self.proc

    def call(self, request: dict) -> dict:
        proc = self._start()
        assert proc.stdin and proc.stdout
        proc.stdin.write(json.dumps(request) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the zymase test server died (exit code {proc.wait()})")
        return json.loads(line)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


_servers: list[_Server] = []
_this_thread = threading.local()
_servers_lock = threading.Lock()


def _server() -> _Server:
    server = getattr(_this_thread, "server", None)
    if server is None:
        server = _this_thread.server = _Server()
        with _servers_lock:
            _servers.append(server)
    return server


@atexit.register
def _close_servers() -> None:
    for server in _servers:
        server.close()


def run_cli(
    argv: list[str],
    *,
    cwd: str | os.PathLike | None = None,
    input: str | bytes | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    program: str = "zymase",
) -> subprocess.CompletedProcess:
    """Run ``<program> <argv...>`` (program ``zymase`` or ``zymase-opt``) and capture its
    output as text, like ``subprocess.run(..., capture_output=True, text=True)``."""
    if os.environ.get("ZYMASE_TEST_SUBPROCESS") == "1":
        return subprocess.run(
            [*_console_script(program), *argv], cwd=cwd, env=env, timeout=timeout,
            capture_output=True, text=True,
            **({"input": input} if input is not None else {"stdin": subprocess.DEVNULL}),
        )
    stdin_path = None
    try:
        if input is not None:
            fd, stdin_path = tempfile.mkstemp(prefix="zymase-test-stdin-")
            with os.fdopen(fd, "wb") as f:
                f.write(input.encode() if isinstance(input, str) else input)
        reply = _server().call({
            "program": program, "argv": [str(a) for a in argv],
            "cwd": str(cwd) if cwd is not None else os.getcwd(),
            "env": dict(env) if env is not None else dict(os.environ),
            "stdin": stdin_path, "timeout": timeout,
        })
    finally:
        if stdin_path:
            os.unlink(stdin_path)
    if reply.get("timed_out"):
        raise subprocess.TimeoutExpired([program, *argv], timeout, reply["stdout"], reply["stderr"])
    return subprocess.CompletedProcess([program, *argv], reply["returncode"], reply["stdout"], reply["stderr"])


# --- the server side --------------------------------------------------------------------


def _run_child(request: dict, out_path: str, err_path: str) -> None:
    """In the forked child: become the command, then exit with its code."""
    rc = 2
    try:
        os.setpgid(0, 0)  # so that a timeout kills clang and the linker too
        stdin_fd = os.open(request["stdin"] or os.devnull, os.O_RDONLY)
        os.dup2(stdin_fd, 0)
        os.dup2(os.open(out_path, os.O_WRONLY), 1)
        os.dup2(os.open(err_path, os.O_WRONLY), 2)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        from zymase import cli

        # the child ends after one command, as a command-line build's process does, whose
        # cyclic garbage zymase leaves to the exit (collect_rarely.not_collecting_until_exit):
        # here main() is called with arguments, which collects rarely and puts the
        # threshold back at the end, a collection over the build's young objects (about
        # 10 ms) just before the child exits
        gc.disable()
        entry = cli.main if request["program"] == "zymase" else cli.opt_main
        sys.argv = [request["program"], *request["argv"]]
        try:
            rc = entry(request["argv"])
        except SystemExit as exit_:
            code = exit_.code
            rc = code if isinstance(code, int) else (0 if code is None else 1)
            if code is not None and not isinstance(code, int):
                print(code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - reported like an uncaught exception would be
        import traceback

        traceback.print_exc()
        rc = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(rc if isinstance(rc, int) else 1)


# Built once by the server before it forks any child: the first build in a process pays
# for tables and caches that zymase fills lazily (the rule registry, clang's version, LLVM's
# target), about 0.1-0.2 s that every child would otherwise pay again.
WARM_UP_PROGRAM = r"""
#include <stdio.h>
extern double __enzyme_autodiff(void *, ...);
extern double __enzyme_fwddiff(void *, ...);
extern int enzyme_dup, enzyme_const;
static double sumsq(const double *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i] * x[i];
    return s;
}
int main(void) {
    double x[3] = {1, 2, 3}, dx[3] = {0};
    __enzyme_autodiff((void *)sumsq, enzyme_dup, x, dx, enzyme_const, 3);
    double t[3] = {1, 0, 0};
    double d = __enzyme_fwddiff((void *)sumsq, enzyme_dup, x, t, enzyme_const, 3);
    printf("%g %g\n", dx[0], d);
    return 0;
}
"""


def _warm_up() -> None:
    from zymase import cli

    with tempfile.TemporaryDirectory(prefix="zymase-test-warm-up-") as tmp:
        src = os.path.join(tmp, "warm.c")
        with open(src, "w") as f:
            f.write(WARM_UP_PROGRAM)
        saved = sys.stdout, sys.stderr
        with open(os.devnull, "w") as devnull:
            sys.stdout = sys.stderr = devnull
            try:
                rc = cli.main(["cc", "-O2", src, "-o", os.path.join(tmp, "warm")])
            finally:
                sys.stdout, sys.stderr = saved
    if rc != 0:
        raise RuntimeError(f"the zymase test server could not build its warm-up program (exit code {rc})")


def _serve() -> None:
    for name in PRELOAD:
        __import__(name)
    _warm_up()
    channel = sys.stdout
    workdir = tempfile.mkdtemp(prefix="zymase-test-server-")
    try:
        for line in sys.stdin:
            request = json.loads(line)
            out_path, err_path = os.path.join(workdir, "out"), os.path.join(workdir, "err")
            for path in (out_path, err_path):
                open(path, "wb").close()
            channel.flush()
            pid = os.fork()
            if pid == 0:
                _run_child(request, out_path, err_path)
            deadline = None if request["timeout"] is None else time.monotonic() + request["timeout"]
            timed_out = False
            while True:
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    break
                if deadline is not None and time.monotonic() > deadline:
                    timed_out = True
                    try:
                        os.killpg(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    os.waitpid(pid, 0)
                    status = -1
                    break
                time.sleep(0.002)
            returncode = os.waitstatus_to_exitcode(status) if status != -1 else -9
            with open(out_path, encoding="utf-8", errors="replace") as f:
                out = f.read()
            with open(err_path, encoding="utf-8", errors="replace") as f:
                err = f.read()
            channel.write(json.dumps(
                {"returncode": returncode, "stdout": out, "stderr": err, "timed_out": timed_out}) + "\n")
            channel.flush()
    finally:
        for name in os.listdir(workdir):
            os.unlink(os.path.join(workdir, name))
        os.rmdir(workdir)


if __name__ == "__main__":
    _serve()
