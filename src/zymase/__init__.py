"""zymase: automatic differentiation of LLVM IR and MLIR, in the spirit of Enzyme."""

__version__ = "0.1.0"
