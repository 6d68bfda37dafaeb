"""adcore's sparsity plugin: the `sparsity` backend, which traces f with index-set tracers and gives
its Jacobian and Hessian patterns, the `sparsity` rules of the core ops, and the graph colorings
that let a sparse Jacobian be computed from a few compressed JVPs, VJPs or differences."""

from adcore_sparsity.backend import SparsityBackend
from adcore_sparsity.fallback import SparsityWarning

__all__ = ["SparsityBackend", "SparsityWarning"]
