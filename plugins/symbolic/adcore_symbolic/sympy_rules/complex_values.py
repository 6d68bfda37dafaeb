"""Core ops whose values are complex (an FFT, a general eigendecomposition): the symbolic
backend's symbols are real and it refuses complex values (docs/complex.md), so these get no
rule; the backend reports them unsupported and names the backends that have them."""

from __future__ import annotations

from adcore_symbolic.sympy_rules.table import NO_SYMPY_FORM

_COMPLEX = "its values are complex, and the symbolic backend differentiates real expressions only"

NO_SYMPY_FORM.update(
    {name: _COMPLEX for name in ("fftn", "ifftn", "rfftn", "irfftn", "eig_packed", "eigvals")}
)
