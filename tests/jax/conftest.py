"""JAX tests: run when the jax extra is installed (CI installs it, see .ci/run); double
precision enabled so that float64 programs lower as float64.

XLA's CPU compiler dominates these tests' time (0.3 s per small program at its default
optimization level); the tests check derivatives, not XLA's code quality, so they
compile without LLVM's expensive passes unless XLA_FLAGS is set already. They compile at
backend optimization level 1, not 0: at level 0 XLA's CPU backend miscompiles some
programs (the JAX fuzzer's seed 300323, a float32 reversed scan, gets a wrong jax.jvp),
and a test comparing zymase's program with JAX's, both run by that XLA, could then fail
or pass for XLA's reasons (about 25% more compile CPU than level 0)."""

import os

os.environ.setdefault("XLA_FLAGS", "--xla_backend_optimization_level=1 --xla_llvm_disable_expensive_passes=true")

import pytest  # noqa: E402

jax = pytest.importorskip("jax")
jax.config.update("jax_enable_x64", True)
