"""adcore: automatic differentiation of NumPy code through interchangeable, pluggable backends."""

from __future__ import annotations

from adcore import extend, ops  # noqa: F401  (extend: the module for rule and backend authors)
from adcore.api import (
    backends,
    differentiate,
    elementwise_grad,
    get_backend,
    grad,
    hessian,
    hvp,
    jacobian,
    jvp,
    optimizer,
    optimizers,
    value_and_grad,
    value_and_jacobian,
    vjp,
)
from adcore.backend import Backend
from adcore.checkpoint import checkpoint
from adcore.core import Trace, Tracer, bind, concrete
from adcore.custom import custom_jvp, custom_vjp
from adcore.errors import (
    AdcoreError,
    BatchedConversionError,
    ComplexValueError,
    GradientError,
    GraphFreedError,
    InvalidArgnumsError,
    InvalidInputError,
    InvalidOutputError,
    InvalidValueError,
    LinearAlgebraError,
    MissingDependencyError,
    MissingRuleError,
    NonScalarOutputError,
    NotHolomorphicError,
    PluginError,
    StateChangedError,
    TracerConversionError,
    UnknownBackendError,
    UnknownOpError,
    UnknownOptimizerError,
    UnreliableEstimateError,
    UnsupportedByBackendError,
    UnsupportedFunctionError,
    ValueDependentError,
)
from adcore.extend import batched_axis, lift, unbroadcast
from adcore.hookspecs import hookimpl
from adcore.results import Estimate
from adcore.sparse import hessian_sparsity, jacobian_sparsity, prepare_hessian, prepare_jacobian
from adcore.spec import Case, Domain, OpSpec, Sample
from adcore.vmap import vmap

__version__ = "0.1.0"

__all__ = [
    "AdcoreError",
    "Backend",
    "BatchedConversionError",
    "Case",
    "Domain",
    "Estimate",
    "GradientError",
    "GraphFreedError",
    "InvalidArgnumsError",
    "InvalidInputError",
    "InvalidOutputError",
    "MissingDependencyError",
    "MissingRuleError",
    "NonScalarOutputError",
    "NotHolomorphicError",
    "OpSpec",
    "PluginError",
    "PreparedHessian",
    "PreparedJacobian",
    "Sample",
    "Trace",
    "Tracer",
    "UnknownBackendError",
    "UnknownOpError",
    "UnknownOptimizerError",
    "UnsupportedFunctionError",
    "ComplexValueError",
    "InvalidValueError",
    "LinearAlgebraError",
    "StateChangedError",
    "TracerConversionError",
    "UnreliableEstimateError",
    "UnsupportedByBackendError",
    "ValueDependentError",
    "backends",
    "batched_axis",
    "bind",
    "checkpoint",
    "concrete",
    "custom_jvp",
    "custom_vjp",
    "differentiate",
    "elementwise_grad",
    "get_backend",
    "grad",
    "hessian",
    "hessian_sparsity",
    "hvp",
    "hookimpl",
    "jacobian",
    "jacobian_sparsity",
    "jvp",
    "lift",
    "ops",
    "optimizer",
    "optimizers",
    "prepare_hessian",
    "prepare_jacobian",
    "unbroadcast",
    "value_and_grad",
    "value_and_jacobian",
    "vjp",
    "vmap",
    "check_grads",
]


def __getattr__(name: str) -> object:
    # check_grads runs the conformance engine, so it is imported on first use: `import adcore` stays light
    if name == "check_grads":
        from adcore.conformance.check_grads import check_grads

        return check_grads
    # the sparse-derivative plugin defines them: looked up (and it loaded) on first use
    if name in ("PreparedJacobian", "PreparedHessian"):
        from adcore.sparse import prepared_type

        return prepared_type(name)
    raise AttributeError(f"module 'adcore' has no attribute {name!r}")
