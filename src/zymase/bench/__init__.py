"""``zymase bench``: the benchmark suite and its runner.

The workloads are C programs in ``workloads/`` (ADBench's GMM, BA, LSTM and hand tracking
written from ADBench's documents, plus vector normalization, an explicit-Euler ODE and an
FFT). Each is built with clang -O2 (the primal baseline) and with ``zymase cc`` with and
without pre-AD optimization, run in its own process, checked against finite differences and,
when installed, against ``jax.jit(jax.grad)`` and PyTorch on the same data.
"""
