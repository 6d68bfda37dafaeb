"""Sparse Jacobians and Hessians: detect the pattern (this plugin's `sparsity` backend), color it,
evaluate one compressed derivative per color on the chosen backend (adcore_sparsity.plans),
decompress into a `scipy.sparse` CSR array. A Hessian is star-colored and its compressed columns are
Hessian-vector products, the outer backend's jvp (or pullbacks: H is symmetric) of the inner
backend's gradient.

adcore's public functions (adcore.jacobian(..., sparse=True), adcore.prepare_jacobian, ...) find
this class through the backend that offers it (SparsityBackend.sparse_derivatives) and call it with
their keywords checked, handing it `engine`: the API layer's backends, option checks and dense
Jacobians, which a plugin may not import (pyproject.toml's "plugins" contract)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from adcore.backend import Backend
from adcore.errors import InvalidInputError
from adcore_sparsity import checks
from adcore_sparsity.plans import implements
from adcore_sparsity.prepared import PreparedHessian, PreparedJacobian, make_hessian, make_jacobian


class SparseDerivatives:
    """The sparse entry points, bound to the sparsity backend that detects and colors patterns
    (`patterns`) and to the API layer's `engine`; the names and arguments are adcore's (adcore.sparse)."""

    PreparedJacobian = PreparedJacobian
    PreparedHessian = PreparedHessian

    def __init__(self, patterns: Backend, engine: Any) -> None:
        self.patterns, self.engine = patterns, engine

    def jacobian_function(
        self, f, argnums, backend: str, sparsity, local, options: dict
    ) -> Callable[..., Any]:
        """adcore.jacobian(f, sparse=True, ...)'s function: each call detects the pattern (unless
        given), colors it and evaluates the compressed Jacobian."""
        be, options, chunk = self._jacobian_backend(f, backend, options)
        given = None if sparsity is None else checks.as_pattern(sparsity, "sparsity")
        checks.check_local(local, given)
        engine, patterns = self.engine, self.patterns

        @functools.wraps(f)
        def sparse_jacobian(*args: Any, **kwargs: Any) -> Any:
            fn = checks.bound(f, kwargs)
            argnum = checks.argnum(engine, argnums, args, "jacobian(sparse=True)")
            args = checks.arguments(engine, args, argnum, "jacobian(sparse=True)")
            prepared = make_jacobian(engine, patterns, fn, args, argnum, be, given, local, options, chunk)
            return prepared.evaluate(args)

        return sparse_jacobian

    def hessian_function(self, f, argnums, inner: str, outer: str, sparsity, local) -> Callable[..., Any]:
        """adcore.hessian(f, sparse=True, ...)'s function: a csr_array (n, n) from star coloring and
        Hessian-vector products (the `outer` backend's derivative of the `inner` one's gradient)."""
        inner_be, outer_be = self._hessian_backends(f, inner, outer)
        given = None if sparsity is None else checks.as_pattern(sparsity, "sparsity", symmetric=True)
        checks.check_local(local, given)
        engine, patterns = self.engine, self.patterns

        @functools.wraps(f)
        def sparse_hessian(*args: Any, **kwargs: Any) -> Any:
            fn = checks.bound(f, kwargs)
            argnum = checks.argnum(engine, argnums, args, "hessian(sparse=True)")
            args = checks.arguments(engine, args, argnum, "hessian(sparse=True)")
            prepared = make_hessian(engine, patterns, fn, args, argnum, inner_be, outer_be, given, local)
            return prepared.evaluate(args)

        return sparse_hessian

    def prepare_jacobian(
        self, f, args: tuple, argnums, backend, sparse, sparsity, local, options
    ) -> PreparedJacobian:
        """adcore.prepare_jacobian: detection (or the given pattern), coloring and plan, once."""
        checks.check_sparse(sparse, "prepare_jacobian", "adcore.jacobian(f, argnums, backend)")
        checks.refuse_local(local, "prepare_jacobian")
        be, options, chunk = self._jacobian_backend(f, backend, options)
        given = None if sparsity is None else checks.as_pattern(sparsity, "sparsity")
        argnum = checks.argnum(self.engine, argnums, args, "prepare_jacobian")
        args = checks.arguments(self.engine, args, argnum, "prepare_jacobian")
        fn = checks.bound(f, {})
        return make_jacobian(self.engine, self.patterns, fn, args, argnum, be, given, False, options, chunk)

    def prepare_hessian(
        self, f, args: tuple, argnums, backend, inner, outer, sparse, sparsity, local
    ) -> PreparedHessian:
        """adcore.prepare_hessian: the Hessian's pattern, star coloring and plan, once."""
        checks.check_sparse(sparse, "prepare_hessian", "adcore.hessian(f, argnums)")
        checks.refuse_local(local, "prepare_hessian")
        inner_be, outer_be = self._hessian_backends(f, *_inner_outer(backend, inner, outer))
        given = None if sparsity is None else checks.as_pattern(sparsity, "sparsity", symmetric=True)
        argnum = checks.argnum(self.engine, argnums, args, "prepare_hessian")
        args = checks.arguments(self.engine, args, argnum, "prepare_hessian")
        fn = checks.bound(f, {})
        return make_hessian(self.engine, self.patterns, fn, args, argnum, inner_be, outer_be, given, False)

    def jacobian_sparsity(self, f, argnums, local) -> Callable[..., Any]:
        """adcore.jacobian_sparsity: f -> a function giving the Jacobian's bool csr_array pattern."""
        return self._pattern_function(f, argnums, local, "jacobian_sparsity", self.patterns.jacobian_pattern)

    def hessian_sparsity(self, f, argnums, local) -> Callable[..., Any]:
        """adcore.hessian_sparsity: f -> a function giving the Hessian's symmetric bool csr_array pattern."""
        return self._pattern_function(f, argnums, local, "hessian_sparsity", self.patterns.hessian_pattern)

    def _pattern_function(
        self, f, argnums, local, what: str, detect: Callable[..., Any]
    ) -> Callable[..., Any]:
        checks.check_callable(f)
        engine = self.engine

        @functools.wraps(f)
        def pattern(*args: Any, **kwargs: Any) -> Any:
            argnum = checks.argnum(engine, argnums, args, what)
            args = checks.arguments(engine, args, argnum, what)
            return detect(checks.bound(f, kwargs), args, argnum, local=local)

        return pattern

    # --- the differentiating backends ---------------------------------------------------------------

    def _jacobian_backend(self, f: Any, backend: str, options: dict) -> tuple[Backend, dict, int | None]:
        """The evaluating backend, its options checked for the method the sparse path calls, and
        the chunk size (colors per jvp call; None: the engine's default)."""
        checks.check_callable(f)
        be = self.engine.get_backend(backend)
        if be.pattern:
            raise InvalidInputError(
                f"backend {backend!r} gives dependency patterns, not derivatives: call "
                "adcore.jacobian_sparsity(f)(x) for the pattern, and pick a differentiating backend here"
            )
        options = dict(options)
        if "return_error" in options:
            raise InvalidInputError(
                "sparse=True gives no error estimate (return_error): each color's difference mixes several "
                "entries; use sparse=False for the error bars"
            )
        chunk = options.pop("chunk_size", None)
        if chunk is not None and not (type(chunk) is int and chunk >= 1):
            raise InvalidInputError(f"chunk_size must be a positive int (colors per jvp call), got {chunk!r}")
        method = "jvp" if implements(be, "jvp") else "vjp" if implements(be, "vjp") else "value_and_jacobian"
        if chunk is not None and method != "jvp":
            raise InvalidInputError(
                f"chunk_size (colors per jvp call) is for backends with a jvp; backend {backend!r} has none"
            )
        self.engine.prepare(f, backend, method, options)
        return be, options, chunk

    def _hessian_backends(self, f: Any, inner: str, outer: str) -> tuple[Backend, Backend]:
        checks.check_callable(f)
        inner_be, outer_be = self.engine.get_backend(inner), self.engine.get_backend(outer)
        for be in (inner_be, outer_be):
            if be.pattern:
                raise InvalidInputError(
                    f"backend {be.name!r} gives dependency patterns, not derivatives: call "
                    "adcore.hessian_sparsity(f)(x) for the pattern, and pick differentiating backends here"
                )
        return inner_be, outer_be


def _inner_outer(backend: str | None, inner: str | None, outer: str | None) -> tuple[str, str]:
    inner = inner if inner is not None else backend if backend is not None else "reverse"
    outer = outer if outer is not None else backend if backend is not None else "forward"
    return inner, outer
