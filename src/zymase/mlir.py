"""Compile MLIR to native code: ``zymase.mlir.compile(text).my_function(1.0, 2.0)``.

A thin public façade over :mod:`zymase.frontends.mlir`.
"""

from zymase.frontends.mlir import ArgumentError, CompiledFunction, CompiledModule, compile

__all__ = ["compile", "CompiledModule", "CompiledFunction", "ArgumentError"]
