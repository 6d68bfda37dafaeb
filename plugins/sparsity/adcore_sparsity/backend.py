"""The `sparsity` backend: Jacobian and Hessian patterns of f by tracing it with index sets, and the
colorings that compress them. Its "Jacobian" is the 0/1 pattern (what conformance compares as a
superset of the other backends' non-zeros). Imports SciPy only when it works, never at load."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.errors import InvalidInputError
from adcore.hookspecs import RuleKind

COLORINGS = {"column": "column_coloring", "row": "row_coloring", "star": "star_coloring"}


# The contract of the "sparsity" rules this plugin brings: the output (a shape-and-dtype stand-in in
# a global pattern), then the op's inputs -> one dependency pattern per input (None, DENSE or a
# sparse matrix): a SparsityRule (adcore_sparsity.extend). An op flagged elementwise needs none.
SPARSITY = RuleKind(
    ("ans",),
    per_input=False,
    elementwise_by_flag=True,
    column=3,
    doc="(ans, *inputs) -> one pattern per input",
)


class SparsityBackend(Backend):
    """Sparsity detection: `jacobian_pattern` and `hessian_pattern` of f at args (global: valid for
    every input, the default; local=True: at this point), `color` for the compressed evaluation."""

    name = "sparsity"
    kinds = ("sparsity",)
    rule_kinds = {"sparsity": SPARSITY}  # the contract of the kind it brings, as data
    builds = "jacobian"
    pattern = True

    def jacobian_pattern(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnum: int,
        *,
        local: bool = False,
        constants: list | None = None,
    ) -> Any:
        """The (out.size, args[argnum].size) bool CSR of the output elements that may depend on each
        input element (flat C order). `constants`, if given, receives (what, object, copy) for each
        array, list or dict f's ops read as a constant: the pattern holds while they do not change."""
        from adcore_sparsity.trace import trace

        _, pattern, _, _ = trace(f, tuple(args), (_argnum(argnum, args),), local=local, constants=constants)
        return pattern

    def hessian_pattern(
        self,
        f: Callable[..., Any],
        args: tuple,
        argnum: int,
        *,
        local: bool = False,
        constants: list | None = None,
    ) -> Any:
        """The symmetric (n, n) bool CSR, n = args[argnum].size: the union over f's output elements
        of the entries their Hessians may have (`constants` as for jacobian_pattern)."""
        from adcore_sparsity.trace import trace

        _, _, hessian, _ = trace(
            f, tuple(args), (_argnum(argnum, args),), local=local, hessian=True, constants=constants
        )
        return hessian

    def value_and_jacobian(
        self, f: Callable[..., Any], args: tuple, argnums: Sequence[int], *, local: bool = False
    ) -> tuple[Any, tuple]:
        """f(*args) and, per argnum, the pattern as a dense 0/1 array of shape out.shape + arg.shape
        in the argument's dtype (adcore.jacobian(f, backend="sparsity", local=...))."""
        from adcore_sparsity.trace import trace

        argnums = tuple(_argnum(i, args) for i in argnums)
        value, pattern, _, sizes = trace(f, tuple(args), argnums, local=local)
        out_shape, dense, start = np.shape(value), pattern.toarray(), 0
        jacobians = []
        for i, size in zip(argnums, sizes):
            arg = np.asarray(args[i])
            block = dense[:, start : start + size].astype(arg.dtype)
            jacobians.append(block.reshape(out_shape + arg.shape))
            start += size
        return value, tuple(jacobians)

    def color(self, pattern: Any, kind: str) -> Any:
        """A Coloring of the pattern: "column" (distance-2 of the columns: one JVP per color), "row"
        (one VJP per color) or "star" (of a symmetric Hessian pattern)."""
        if kind not in COLORINGS:
            raise InvalidInputError(f"coloring kind must be one of {sorted(COLORINGS)}, got {kind!r}")
        from adcore_sparsity import coloring

        return getattr(coloring, COLORINGS[kind])(pattern)

    def sparse_derivatives(self, engine: Any) -> Any:
        """The sparse Jacobians and Hessians this backend's patterns make possible (adcore.sparse finds
        them here): an adcore_sparsity.sparse.SparseDerivatives evaluating on adcore's `engine`."""
        from adcore_sparsity.sparse import SparseDerivatives

        return SparseDerivatives(self, engine)

    def exact_for(self, op_name: str) -> bool:
        """Whether the op's pattern claims to equal its Jacobian's non-zeros at generic points."""
        from adcore_sparsity.fallback import exact

        return exact(op_name)


def _argnum(argnum: Any, args: Sequence[Any]) -> int:
    """argnum as a position among args, or a typed error."""
    if type(argnum) is not int or not -len(args) <= argnum < len(args):
        raise InvalidInputError(
            f"argnum must be an int position among f's {len(args)} argument(s), got {argnum!r}"
        )
    return argnum % len(args)
