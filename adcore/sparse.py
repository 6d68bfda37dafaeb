"""Sparse Jacobians and Hessians, the public functions: each hands its call to the plugin that provides
sparse derivatives (pattern detection, coloring, compressed evaluation, scipy.sparse results), found
by what it registered: a backend that gives dependency patterns (`pattern = True`) and offers
`sparse_derivatives(engine)`. Without one, a MissingDependencyError says what to install.

`Engine` is what the provider evaluates with: this layer's backends, option checks, dense Jacobians
and argument checks, which a plugin may not import itself (pyproject.toml's "plugins" contract).
Nothing here imports SciPy or the provider: both load on the first sparse call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from adcore import derivatives, inputs, tree
from adcore.errors import InvalidInputError, MissingDependencyError, keywords_checked
from adcore.plugins import get_registry


class Engine:
    """The API layer's services a sparse-derivative provider is handed (adcore.derivatives' names)."""

    get_backend = staticmethod(derivatives.get_backend)
    prepare = staticmethod(derivatives.prepare)  # f callable, the backend's options for a method
    value_and_jacobian = staticmethod(derivatives.value_and_jacobian)
    default_chunk_size = staticmethod(derivatives.default_chunk_size)
    pull_back_rows = staticmethod(derivatives.pull_back_rows)  # a batch of cotangents, one vmapped sweep
    normalize_argnums = staticmethod(inputs.normalize_argnums)
    float_input = staticmethod(inputs.float_input)

    @staticmethod
    def is_pytree(x: Any) -> bool:
        """Whether x is a container of arrays (a dict, list, tuple...), not one leaf."""
        return not tree.is_leaf(tree.structure(x))


def provider() -> Any:
    """The installed sparse derivatives, bound to the Engine, or an error saying what to install."""
    for _, be in sorted(get_registry().backends.items()):
        offer = getattr(be, "sparse_derivatives", None)
        if be.pattern and offer is not None:
            return offer(Engine)
    raise MissingDependencyError(
        "sparse Jacobians and Hessians (pattern detection, coloring, compressed evaluation) come from a "
        "plugin, and none is installed: pip install adcore-sparsity"
    )


def prepared_type(name: str) -> type:
    """adcore.PreparedJacobian or adcore.PreparedHessian: the provider's class."""
    return getattr(provider(), name)


def jacobian_function(
    f: Callable[..., Any], argnums: Any, backend: str, sparsity: Any, local: bool, options: dict
) -> Callable[..., Any]:
    """adcore.jacobian(f, sparse=True, ...)'s function: each call detects the pattern (unless
    `sparsity` is given), colors it and evaluates the compressed Jacobian; a csr_array (m, n).

    A given `sparsity` is trusted on the compressed paths: an entry it misses is not computed
    (its column's or row's color mixes it into entries it does not own), which cannot be told
    cheaply; only the dense path (a backend with neither jvp nor vjp) checks it."""
    return provider().jacobian_function(f, argnums, backend, sparsity, local, options)


def hessian_function(
    f: Callable[..., Any], argnums: Any, inner: str, outer: str, sparsity: Any, local: bool
) -> Callable[..., Any]:
    """adcore.hessian(f, sparse=True, ...)'s function: a csr_array (n, n) from star coloring and
    Hessian-vector products (the `outer` backend's derivative of the `inner` one's gradient).
    A given `sparsity` is trusted as for jacobian_function (symmetrised: P | P.T)."""
    return provider().hessian_function(f, argnums, inner, outer, sparsity, local)


@keywords_checked
def prepare_jacobian(
    f: Callable[..., Any],
    *args: Any,
    argnums: int = 0,
    backend: str = "reverse",
    sparse: bool = True,
    sparsity: Any = None,
    local: bool = False,
    **options: Any,
) -> Any:
    """The sparse Jacobian of f with respect to args[argnums], prepared at these arguments:
    `prep = prepare_jacobian(f, x)`, then `prep(x_new)` is the csr_array (m, n) at x_new.

    Detection (or the given `sparsity`), coloring and seeds are done here, once; each call only
    evaluates the compressed derivative and decompresses. Every call is checked against what it
    was prepared for: the differentiated argument's shape and dtype, the other float arguments'
    shapes and dtypes (their values may change: a global pattern holds for all of them), and the
    other arguments themselves (ints, index arrays, strings, and the arrays and lists inside
    dicts, lists and tuples: a write into one is seen). Arrays, lists and dicts f's ops read as
    constants when the pattern was detected (a closure's matrix, whose zeros shape the pattern; an
    index array) are checked on each call too: a change is a StateChangedError (prepare again, or
    pass a float array that changes as a float argument). A closure rebound to a new object is not
    seen. A given
    `sparsity` is trusted (see adcore.jacobian); `prep.pattern` and `prep.coloring` show what
    was prepared. The result is an adcore.PreparedJacobian."""
    return provider().prepare_jacobian(f, args, argnums, backend, sparse, sparsity, local, options)


@keywords_checked
def prepare_hessian(
    f: Callable[..., Any],
    *args: Any,
    argnums: int = 0,
    backend: str | None = None,
    inner: str | None = None,
    outer: str | None = None,
    sparse: bool = True,
    sparsity: Any = None,
    local: bool = False,
) -> Any:
    """The sparse Hessian of a scalar f with respect to args[argnums], prepared at these
    arguments (pattern, star coloring, seeds); `prep(x_new)` is the csr_array (n, n) at x_new,
    checked as prepare_jacobian's calls are. `inner`/`outer`/`backend` as for adcore.hessian.
    The result is an adcore.PreparedHessian."""
    return provider().prepare_hessian(f, args, argnums, backend, inner, outer, sparse, sparsity, local)


@keywords_checked
def jacobian_sparsity(f: Callable[..., Any], argnums: int = 0, local: bool = False) -> Callable[..., Any]:
    """The Jacobian's pattern: `jacobian_sparsity(f)(x)` is a bool csr_array (m, n), m = f(x).size,
    n = x.size (flat C order), holding every entry that may be non-zero for any x (global), or
    at this x only with local=True (where/maximum pick the branch taken there)."""
    return provider().jacobian_sparsity(f, argnums, local)


@keywords_checked
def hessian_sparsity(f: Callable[..., Any], argnums: int = 0, local: bool = False) -> Callable[..., Any]:
    """The Hessian's pattern of a scalar f: `hessian_sparsity(f)(x)` is a symmetric bool
    csr_array (n, n), global unless local=True (as jacobian_sparsity)."""
    return provider().hessian_sparsity(f, argnums, local)


def sparse_only(sparse: bool, has_aux: bool, holomorphic: bool) -> None:
    """sparsity= and local= belong to sparse=True, which takes neither has_aux nor holomorphic."""
    if sparse is not True:
        raise InvalidInputError(
            f"sparsity= and local= are options of sparse derivatives: add sparse=True (got sparse={sparse!r})"
        )
    if has_aux or holomorphic:
        raise InvalidInputError(
            "sparse=True takes neither has_aux nor holomorphic: it differentiates a real function of one "
            "real array returning one array (call f yourself for its aux)"
        )
