"""Conformance: check every op's derivatives, on every backend, against its NumPy impl."""

from adcore.conformance.gradcheck import (
    CheckFailure,
    check_dtype_kept,
    check_jvp,
    check_vjp,
    numeric_jacobian,
)

__all__ = ["CheckFailure", "check_dtype_kept", "check_jvp", "check_vjp", "numeric_jacobian"]
