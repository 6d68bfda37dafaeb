"""adcore's sparsity plugin: the `sparsity` backend, which traces f with index-set tracers and gives
its Jacobian and Hessian patterns; the `sparsity` rules of the core ops and the helpers rule authors
write them with (`adcore_sparsity.extend`); the graph colorings that let a sparse Jacobian be computed
from a few compressed JVPs, VJPs or differences; and the sparse Jacobians and Hessians behind
adcore.jacobian(..., sparse=True), adcore.prepare_jacobian and the rest (`adcore_sparsity.sparse`)."""

from adcore_sparsity.backend import SparsityBackend
from adcore_sparsity.fallback import SparsityWarning

__all__ = ["SparsityBackend", "SparsityWarning"]
