#!/usr/bin/env python3
"""The benchmark runner moved into the package: this is `zymase bench` (same arguments).
The workloads live in src/zymase/bench/workloads/ so that an installed zymase has them."""
import sys

from zymase.bench.runner import main

if __name__ == "__main__":
    sys.exit(main())
