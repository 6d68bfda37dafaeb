"""Evaluation plans: how a backend gives a sparse derivative, by its contract (adcore.backend). A plan is
called `plan(g, x)`, g a function of the differentiated array x alone, and returns a csr_array.

A backend with its own `jvp` (forward, numeric) gets a column coloring and ONE jvp call with every
color's seed as its batch (chunked when huge); a backend with a `vjp` (reverse) a row coloring and one
pullback per row color (all of them in one vmapped pullback when it `batches`); a backend with neither
(symbolic) computes its dense Jacobian, which is checked to vanish outside the pattern and then
restricted to it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.backend import Backend
from adcore.errors import InvalidValueError
from adcore_sparsity.checks import check_rows, scipy_sparse


def plan(
    engine: Any, be: Backend, coloring_of: Callable, pattern, column_kind, row_kind, x, options, chunk, given
):
    """(plan, coloring): how `be` evaluates the sparse derivative, by its contract; `coloring_of(pattern,
    kind)` colors the pattern."""
    if implements(be, "jvp"):
        coloring = coloring_of(pattern, column_kind)
        return ByJvp(engine, be, coloring, x, options, chunk), coloring
    if implements(be, "vjp"):
        coloring = coloring_of(pattern, row_kind)
        return ByVjp(engine, be, coloring, options), coloring
    return Restricted(engine, be, pattern, options, given), None


def implements(be: Backend, method: str) -> bool:
    """Whether the backend has its own `method` ("jvp" or "vjp"), not the base class's refusal."""
    return getattr(type(be), method) is not getattr(Backend, method)


class ByJvp:
    """Column (or star) coloring: one jvp call per chunk of colors, every color's seed in its
    batch; compressed[c] = J @ seed_c."""

    def __init__(
        self, engine: Any, be: Backend, coloring: Any, x: np.ndarray, options: dict, chunk: int | None
    ) -> None:
        self.be, self.coloring, self.options = be, coloring, options
        k, n = coloring.ncolors, x.size
        self.rows = coloring.pattern.shape[0]
        seeds = np.ascontiguousarray(coloring.seeds(x.dtype)).reshape((k,) + x.shape)
        step = chunk if chunk is not None else engine.default_chunk_size(n)
        self.seeds = [seeds[s : s + step] for s in range(0, k, step)]
        self.dtype = x.dtype
        # An estimating backend (numeric) takes one step along each seed, sized by the largest |x|: each
        # column is scaled by max(|x_j|, 1) along it, so every column gets its own relative step, as in
        # a dense estimate (SciPy's groups do the same), and the entries are scaled back after. (A star
        # coloring reads some H[i, j] along column i: its scale would not be column j's, so it is not scaled.)
        self.scaled = be.estimates and coloring.kind == "column"

    def __call__(self, g: Callable[..., Any], x: np.ndarray) -> Any:
        parts = []
        out = None
        scale = np.maximum(np.abs(x), 1).astype(self.dtype, copy=False) if self.scaled else None
        for seed in self.seeds:
            if scale is not None:
                seed = seed * scale
            out, tangent = self.be.jvp(g, (x,), (seed,), **self.options)
            if tangent is None:  # the output does not depend on the argument
                tangent = np.zeros((len(seed), np.size(out)), dtype=self.dtype)
            parts.append(np.asarray(tangent).reshape(len(seed), -1))
        if out is None:  # no color: an empty pattern; f's output size is still checked
            out = g(x)
        check_rows(np.size(out), self.rows, self.be.name)
        compressed = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else None
        if compressed is None:
            compressed = np.zeros((0, self.rows), dtype=self.dtype)
        jacobian = self.coloring.decompress(compressed.astype(self.dtype, copy=False))
        if scale is not None:
            jacobian.data /= scale.reshape(-1)[jacobian.indices]
        return jacobian


class ByVjp:
    """Row (or star) coloring: one pullback per color, or of every color at once, vmapped, on a
    backend that `batches`; compressed[c] = seed_c @ J."""

    def __init__(self, engine: Any, be: Backend, coloring: Any, options: dict) -> None:
        self.engine, self.be, self.coloring, self.options = engine, be, coloring, options
        self.rows = coloring.pattern.shape[0]
        self.seeds = coloring.seeds(np.float64)

    def __call__(self, g: Callable[..., Any], x: np.ndarray) -> Any:
        out, pullback = self.be.vjp(g, (x,), (0,), **self.options)
        check_rows(np.size(out), self.rows, self.be.name)
        k = self.coloring.ncolors
        compressed = np.zeros((k, x.size), dtype=x.dtype)
        if pullback is not None:
            dtype = getattr(out, "dtype", np.dtype(float))
            seeds = self.seeds.astype(dtype, copy=False).reshape((k,) + np.shape(out))
            batched = None
            if self.be.batches and k:  # every color's seed in one vmapped pullback
                batched = self.engine.pull_back_rows(pullback, seeds, (x,), (0,))
            if batched is not None:
                compressed[:] = np.reshape(batched[0], (k, -1))
                return self.coloring.decompress(compressed)
            for c in range(k):
                (g,) = pullback(seeds[c], final=c == k - 1)
                if g is not None:
                    compressed[c] = np.asarray(g).reshape(-1)
        return self.coloring.decompress(compressed)


class Restricted:
    """A backend with neither jvp nor vjp: its dense Jacobian, checked to vanish outside the
    pattern (else the pattern was wrong for f), restricted to it."""

    def __init__(self, engine: Any, be: Backend, pattern: Any, options: dict, given: bool) -> None:
        self.engine, self.be, self.pattern, self.options, self.given = engine, be, pattern, options, given
        self.rows_of = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))

    def __call__(self, g: Callable[..., Any], x: np.ndarray) -> Any:
        sp = scipy_sparse()
        found = self.engine.value_and_jacobian(
            self.be, g, (x,), (0,), scalar=False, want_value=False, options=self.options
        )
        jac = np.asarray(found.jacobians[0])
        m = int(np.prod(jac.shape[: jac.ndim - x.ndim]))
        check_rows(m, self.pattern.shape[0], self.be.name)
        jac = jac.reshape(m, x.size)
        values = jac[self.rows_of, self.pattern.indices]
        outside = jac.copy()
        outside[self.rows_of, self.pattern.indices] = 0
        self._check_outside(outside)
        p = self.pattern
        return sp.csr_array((values, p.indices.copy(), p.indptr.copy()), shape=p.shape)

    def _check_outside(self, outside: np.ndarray) -> None:
        missed = np.flatnonzero(outside)
        if not missed.size:
            return
        i, j = divmod(int(missed[0]), outside.shape[1])
        where = (
            f"backend {self.be.name!r} found {missed.size} non-zero entr{'y' if missed.size == 1 else 'ies'} "
            f"outside the pattern, the first at ({i}, {j}) = {outside[i, j]!r}"
        )
        if self.given:
            raise InvalidValueError(
                f"the sparsity= pattern misses entries the derivative has: {where}. Pass a pattern that "
                "holds every entry that may be non-zero, or leave sparsity out to detect it"
            )
        raise InvalidValueError(
            f"the detected sparsity pattern misses entries the derivative has: {where}. This is a bug "
            "in an op's sparsity rule (please report it with f); meanwhile pass sparsity= yourself or "
            "use sparse=False"
        )
