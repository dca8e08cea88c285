"""The fuzzer of issue 23 (no silent wrong answer): see tests/fuzz/README.md."""
