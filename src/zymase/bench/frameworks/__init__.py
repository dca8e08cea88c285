"""The workloads in JAX and PyTorch, as their users would write them, run by ``worker``
in a separate process per framework and workload (one thread each)."""
