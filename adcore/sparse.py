"""Sparse Jacobians and Hessians: detect the pattern (the `sparsity` backend), color it, evaluate
one compressed derivative per color on the chosen backend, decompress into a `scipy.sparse`
CSR array.

How each backend is driven follows its contract (adcore.backend): a backend with its own `jvp`
(forward, numeric) gets a column coloring and ONE jvp call with every color's seed as its batch
(chunked when huge); a backend with a `vjp` (reverse) a row coloring and one pullback per row
color; a backend with neither (symbolic) computes its dense Jacobian, which is checked to vanish
outside the pattern and then restricted to it. A Hessian is star-colored and its compressed
columns are Hessian-vector products, the outer backend's jvp (or pullbacks: H is symmetric) of
the inner backend's gradient.

`prepare_jacobian` / `prepare_hessian` do detection and coloring once and check every later
call against the shapes, dtypes and non-float arguments they were made for. SciPy is imported
inside the functions that need it, never at `import adcore`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore import derivatives, tree
from adcore.backend import Backend
from adcore.core import Tracer, frozen_value
from adcore.errors import (
    ComplexValueError,
    InvalidArgnumsError,
    InvalidInputError,
    InvalidOutputError,
    InvalidValueError,
    MissingDependencyError,
    StateChangedError,
    UnknownBackendError,
    keywords_checked,
)

SPARSITY_BACKEND = "sparsity"


# --- the public functions --------------------------------------------------------------------


def jacobian_function(
    f: Callable[..., Any],
    argnums: Any,
    backend: str,
    sparsity: Any,
    local: bool,
    options: dict,
) -> Callable[..., Any]:
    """adcore.jacobian(f, sparse=True, ...)'s function: each call detects the pattern (unless
    `sparsity` is given), colors it and evaluates the compressed Jacobian; a csr_array (m, n).

    A given `sparsity` is trusted on the compressed paths: an entry it misses is not computed
    (its column's or row's color mixes it into entries it does not own), which cannot be told
    cheaply; only the dense path (a backend with neither jvp nor vjp) checks it."""
    be, options, chunk = _jacobian_backend(f, backend, options)
    given = None if sparsity is None else as_pattern(sparsity, "sparsity")
    _check_local(local, given)

    @functools.wraps(f)
    def sparse_jacobian(*args: Any, **kwargs: Any) -> Any:
        fn = _bound(f, kwargs)
        argnum = _argnum(argnums, args, "jacobian(sparse=True)")
        args = _arguments(args, argnum, "jacobian(sparse=True)")
        return _make_jacobian(fn, args, argnum, be, given, local, options, chunk).evaluate(args)

    return sparse_jacobian


def hessian_function(
    f: Callable[..., Any], argnums: Any, inner: str, outer: str, sparsity: Any, local: bool
) -> Callable[..., Any]:
    """adcore.hessian(f, sparse=True, ...)'s function: a csr_array (n, n) from star coloring and
    Hessian-vector products (the `outer` backend's derivative of the `inner` one's gradient).
    A given `sparsity` is trusted as for jacobian_function (symmetrised: P | P.T)."""
    inner_be, outer_be = _hessian_backends(f, inner, outer)
    given = None if sparsity is None else as_pattern(sparsity, "sparsity", symmetric=True)
    _check_local(local, given)

    @functools.wraps(f)
    def sparse_hessian(*args: Any, **kwargs: Any) -> Any:
        fn = _bound(f, kwargs)
        argnum = _argnum(argnums, args, "hessian(sparse=True)")
        args = _arguments(args, argnum, "hessian(sparse=True)")
        return _make_hessian(fn, args, argnum, inner_be, outer_be, given, local).evaluate(args)

    return sparse_hessian


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
) -> PreparedJacobian:
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
    was prepared."""
    _check_sparse(sparse, "prepare_jacobian", "adcore.jacobian(f, argnums, backend)")
    _refuse_local(local, "prepare_jacobian")
    be, options, chunk = _jacobian_backend(f, backend, options)
    given = None if sparsity is None else as_pattern(sparsity, "sparsity")
    argnum = _argnum(argnums, args, "prepare_jacobian")
    args = _arguments(args, argnum, "prepare_jacobian")
    return _make_jacobian(_bound(f, {}), args, argnum, be, given, False, options, chunk)


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
) -> PreparedHessian:
    """The sparse Hessian of a scalar f with respect to args[argnums], prepared at these
    arguments (pattern, star coloring, seeds); `prep(x_new)` is the csr_array (n, n) at x_new,
    checked as prepare_jacobian's calls are. `inner`/`outer`/`backend` as for adcore.hessian."""
    _check_sparse(sparse, "prepare_hessian", "adcore.hessian(f, argnums)")
    _refuse_local(local, "prepare_hessian")
    inner_be, outer_be = _hessian_backends(f, *_inner_outer(backend, inner, outer))
    given = None if sparsity is None else as_pattern(sparsity, "sparsity", symmetric=True)
    argnum = _argnum(argnums, args, "prepare_hessian")
    args = _arguments(args, argnum, "prepare_hessian")
    return _make_hessian(_bound(f, {}), args, argnum, inner_be, outer_be, given, False)


@keywords_checked
def jacobian_sparsity(f: Callable[..., Any], argnums: int = 0, local: bool = False) -> Callable[..., Any]:
    """The Jacobian's pattern: `jacobian_sparsity(f)(x)` is a bool csr_array (m, n), m = f(x).size,
    n = x.size (flat C order), holding every entry that may be non-zero for any x (global), or
    at this x only with local=True (where/maximum pick the branch taken there)."""
    _callable(f)

    @functools.wraps(f)
    def pattern(*args: Any, **kwargs: Any) -> Any:
        argnum = _argnum(argnums, args, "jacobian_sparsity")
        args = _arguments(args, argnum, "jacobian_sparsity")
        return sparsity_backend().jacobian_pattern(_bound(f, kwargs), args, argnum, local=local)

    return pattern


@keywords_checked
def hessian_sparsity(f: Callable[..., Any], argnums: int = 0, local: bool = False) -> Callable[..., Any]:
    """The Hessian's pattern of a scalar f: `hessian_sparsity(f)(x)` is a symmetric bool
    csr_array (n, n), global unless local=True (as jacobian_sparsity)."""
    _callable(f)

    @functools.wraps(f)
    def pattern(*args: Any, **kwargs: Any) -> Any:
        argnum = _argnum(argnums, args, "hessian_sparsity")
        args = _arguments(args, argnum, "hessian_sparsity")
        return sparsity_backend().hessian_pattern(_bound(f, kwargs), args, argnum, local=local)

    return pattern


# --- prepared derivatives -----------------------------------------------------------------------


class PreparedJacobian:
    """A sparse Jacobian prepared for repeated calls: `prep(*args)` -> csr_array (m, n).

    `pattern` (bool csr_array) and `coloring` (None on the dense path of a backend with neither
    jvp nor vjp) are what was prepared; `backend` names the backend that evaluates."""

    what = "Jacobian"

    def __init__(
        self,
        f: Callable[..., Any],
        signature: _Signature,
        backend: str,
        pattern: Any,
        coloring: Any,
        plan: Callable[[Callable[..., Any], np.ndarray], Any],
    ) -> None:
        self._f, self._signature, self._plan = f, signature, plan
        self.backend, self.pattern, self.coloring = backend, pattern, coloring

    def __call__(self, *args: Any) -> Any:
        return self.evaluate(self._signature.check(args, f"prepared {self.what}"))

    def evaluate(self, args: tuple) -> Any:
        """The sparse derivative at checked arguments."""
        argnum = self._signature.argnum
        return self._plan(_of_one(self._f, args, argnum), args[argnum])

    def __repr__(self) -> str:
        m, n = self.pattern.shape
        colors = (
            "dense path" if self.coloring is None else f"{self.coloring.ncolors} {self.coloring.kind} colors"
        )
        return (
            f"<prepared sparse {self.what} ({m}, {n}), {self.pattern.nnz} entries, {colors}, "
            f"backend {self.backend!r}>"
        )


class PreparedHessian(PreparedJacobian):
    """A sparse Hessian prepared for repeated calls: `prep(*args)` -> csr_array (n, n)."""

    what = "Hessian"
    inner: str = ""  # the backend of the gradient that `backend` differentiates again


def _make_jacobian(f, args, argnum, be, given, local, options, chunk) -> PreparedJacobian:
    """Pattern (given or detected), coloring and plan for f at args."""
    n, constants = args[argnum].size, []
    if given is not None:
        _check_columns(given, n, "sparsity")
        pattern = given
    else:
        pattern = sparsity_backend().jacobian_pattern(f, args, argnum, local=local, constants=constants)
    plan, coloring = _plan(be, pattern, "column", "row", args[argnum], options, chunk, given is not None)
    return PreparedJacobian(f, _Signature(args, argnum, constants), be.name, pattern, coloring, plan)


def _make_hessian(f, args, argnum, inner_be, outer_be, given, local) -> PreparedHessian:
    """Pattern, star coloring and plan for f's Hessian at args: the plan differentiates the
    gradient (by `inner_be`) with `outer_be`."""
    n, constants = args[argnum].size, []
    if given is not None:
        _check_columns(given, n, "sparsity")
        if given.shape[0] != n:
            raise InvalidInputError(
                f"sparsity has shape {given.shape}, but a Hessian with respect to an argument of {n} "
                f"elements is ({n}, {n})"
            )
        pattern = given
    else:
        pattern = sparsity_backend().hessian_pattern(f, args, argnum, local=local, constants=constants)
    plan, coloring = _plan(outer_be, pattern, "star", "star", args[argnum], {}, None, given is not None)
    gradient = _gradient(f, inner_be, argnum)
    signature = _Signature(args, argnum, constants)
    prepared = PreparedHessian(gradient, signature, outer_be.name, pattern, coloring, plan)
    prepared.inner = inner_be.name
    return prepared


def _gradient(f: Callable[..., Any], inner: Backend, argnum: int) -> Callable[..., Any]:
    """f's gradient with respect to args[argnum] by the `inner` backend, as a function of all
    the arguments (the outer backend differentiates it again)."""

    def gradient(*args: Any) -> Any:
        found = derivatives.value_and_jacobian(
            inner, f, args, (argnum,), scalar=True, want_value=False, options={}
        )
        return found.jacobians[0]

    return gradient


def _of_one(f: Callable[..., Any], args: tuple, argnum: int) -> Callable[..., Any]:
    """f as a function of args[argnum] alone, the other arguments fixed: a backend then sees one
    float argument, never an index array or a string it might try to perturb or measure."""
    if len(args) == 1:
        return f
    before, after = args[:argnum], args[argnum + 1 :]
    return lambda x: f(*before, x, *after)


# --- evaluation plans: one per way a backend gives derivatives: plan(g, x), g a function of x --------


def _plan(be: Backend, pattern, column_kind, row_kind, x, options, chunk, given) -> tuple:
    """(plan, coloring): how `be` evaluates the sparse derivative, by its contract."""
    if _implements(be, "jvp"):
        coloring = sparsity_backend().color(pattern, column_kind)
        return _ByJvp(be, coloring, x, options, chunk), coloring
    if _implements(be, "vjp"):
        coloring = sparsity_backend().color(pattern, row_kind)
        return _ByVjp(be, coloring, options), coloring
    return _Restricted(be, pattern, options, given), None


def _implements(be: Backend, method: str) -> bool:
    return getattr(type(be), method) is not getattr(Backend, method)


class _ByJvp:
    """Column (or star) coloring: one jvp call per chunk of colors, every color's seed in its
    batch; compressed[c] = J @ seed_c."""

    def __init__(self, be: Backend, coloring: Any, x: np.ndarray, options: dict, chunk: int | None) -> None:
        self.be, self.coloring, self.options = be, coloring, options
        k, n = coloring.ncolors, x.size
        self.rows = coloring.pattern.shape[0]
        seeds = np.ascontiguousarray(coloring.seeds(x.dtype)).reshape((k,) + x.shape)
        step = chunk if chunk is not None else derivatives.default_chunk_size(n)
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
        _check_rows(np.size(out), self.rows, self.be.name)
        compressed = parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else None
        if compressed is None:
            compressed = np.zeros((0, self.rows), dtype=self.dtype)
        jacobian = self.coloring.decompress(compressed.astype(self.dtype, copy=False))
        if scale is not None:
            jacobian.data /= scale.reshape(-1)[jacobian.indices]
        return jacobian


class _ByVjp:
    """Row (or star) coloring: one pullback per color; compressed[c] = seed_c @ J."""

    def __init__(self, be: Backend, coloring: Any, options: dict) -> None:
        self.be, self.coloring, self.options = be, coloring, options
        self.rows = coloring.pattern.shape[0]
        self.seeds = coloring.seeds(np.float64)

    def __call__(self, g: Callable[..., Any], x: np.ndarray) -> Any:
        out, pullback = self.be.vjp(g, (x,), (0,), **self.options)
        _check_rows(np.size(out), self.rows, self.be.name)
        k = self.coloring.ncolors
        compressed = np.zeros((k, x.size), dtype=x.dtype)
        if pullback is not None:
            dtype = getattr(out, "dtype", np.dtype(float))
            seeds = self.seeds.astype(dtype, copy=False).reshape((k,) + np.shape(out))
            for c in range(k):
                (g,) = pullback(seeds[c], final=c == k - 1)
                if g is not None:
                    compressed[c] = np.asarray(g).reshape(-1)
        return self.coloring.decompress(compressed)


class _Restricted:
    """A backend with neither jvp nor vjp: its dense Jacobian, checked to vanish outside the
    pattern (else the pattern was wrong for f), restricted to it."""

    def __init__(self, be: Backend, pattern: Any, options: dict, given: bool) -> None:
        self.be, self.pattern, self.options, self.given = be, pattern, options, given
        self.rows_of = np.repeat(np.arange(pattern.shape[0]), np.diff(pattern.indptr))

    def __call__(self, g: Callable[..., Any], x: np.ndarray) -> Any:
        sp = scipy_sparse()
        found = derivatives.value_and_jacobian(
            self.be, g, (x,), (0,), scalar=False, want_value=False, options=self.options
        )
        jac = np.asarray(found.jacobians[0])
        m = int(np.prod(jac.shape[: jac.ndim - x.ndim]))
        _check_rows(m, self.pattern.shape[0], self.be.name)
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


# --- checks ------------------------------------------------------------------------------------


class _Signature:
    """What a prepared derivative was made for: the number of arguments, the differentiated
    one's and the other float arguments' shapes and dtypes, and what may have shaped the pattern:
    the other arguments themselves (copies of the arrays, lists and dicts in them, so one written
    into or appended to is seen) and the constants f's ops read when it was detected (`constants`,
    (what, object, copy) from the sparsity backend: a closure's matrix, an index array)."""

    def __init__(self, args: tuple, argnum: int, constants: list) -> None:
        self.argnum, self.nargs, self.constants = argnum, len(args), constants
        self.kinds: list[tuple] = []
        for i, a in enumerate(args):
            if i == argnum or _is_float(a):
                self.kinds.append(("float", np.shape(a), _dtype_of(a)))
            else:
                self.kinds.append(("fixed", frozen_value(a)))

    def check(self, args: tuple, what: str) -> tuple:
        """The arguments (the differentiated one as an array), or a typed error naming the first
        that differs from what was prepared."""
        if len(args) != self.nargs:
            raise InvalidInputError(
                f"{what}: called with {len(args)} positional argument(s) but prepared with {self.nargs}; "
                "call it with arguments like those it was prepared with"
            )
        args = _arguments(args, self.argnum, what)
        for i, (a, kind) in enumerate(zip(args, self.kinds)):
            if kind[0] == "float":
                self._check_float(i, a, kind[1], kind[2], what)
            elif not _same(a, kind[1]):
                raise InvalidInputError(
                    f"{what}: argument {i} differs from the one it was prepared with ({_short(kind[1])}, now "
                    f"{_short(a)}); arguments that are not float arrays may shape the sparsity pattern, so "
                    "they must stay the same: prepare again for the new one"
                )
        self._check_constants(what)
        return args

    def _check_constants(self, what: str) -> None:
        for where, value, copy in self.constants:
            if not _same(value, copy):
                raise StateChangedError(
                    f"{what}: a constant f read when its sparsity pattern was detected ({where}: "
                    f"{_short(copy)}) has changed since, written into in place, so the pattern may no "
                    "longer hold. Prepare again after changing it; a float array whose values change "
                    "between calls may instead be passed to f as a float argument, whose values the "
                    "pattern never reads"
                )

    def _check_float(self, i: int, a: Any, shape: tuple, dtype: np.dtype, what: str) -> None:
        role = "the differentiated argument" if i == self.argnum else "a float argument"
        if not (i == self.argnum or _is_float(a)):
            raise InvalidInputError(
                f"{what}: argument {i} was {role} of shape {shape} and dtype {dtype} when prepared, now it "
                f"is {_short(a)}; pass one of that shape and dtype, or prepare again"
            )
        if np.shape(a) != shape or _dtype_of(a) != dtype:
            raise InvalidInputError(
                f"{what}: argument {i} ({role}) has shape {np.shape(a)} and dtype {_dtype_of(a)}, but it "
                f"was prepared for shape {shape} and dtype {dtype}; pass one of those, or prepare again "
                "for the new shape (the pattern and its coloring depend on it)"
            )


def _is_float(a: Any) -> bool:
    """A float (or complex) array or number: the sparsity backend traces it with an empty pattern
    in a global trace, so the pattern never reads it and its values may change."""
    if isinstance(a, (bool, np.bool_)):
        return False
    return isinstance(a, (float, complex)) or (
        isinstance(a, (np.ndarray, np.generic)) and a.dtype.kind in "fc"
    )


def _dtype_of(a: Any) -> np.dtype:
    return np.dtype(getattr(a, "dtype", np.result_type(a)))


def _same(a: Any, b: Any) -> bool:
    """Whether two non-float arguments are the same (arrays: shape, dtype and elements; lists,
    tuples and dicts: item by item, as the one may have been written into since the other's copy)."""
    if isinstance(a, (list, tuple, dict)) or isinstance(b, (list, tuple, dict)):
        if type(a) is not type(b) or len(a) != len(b):
            return False
        if isinstance(a, dict):
            return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
        return all(_same(x, y) for x, y in zip(a, b))
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        if not (isinstance(a, np.ndarray) and isinstance(b, np.ndarray)):
            return False
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # an object whose == is not a truth value (a list of arrays): not the same
        return False


def _short(a: Any) -> str:
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"{type(a).__name__} {a!r:.40}"


def _argnum(argnums: Any, args: tuple, what: str) -> int:
    """The one differentiated position: the sparse path takes one argument."""
    if type(argnums) is not int:
        raise InvalidArgnumsError(
            f"{what} differentiates one argument, so argnums must be an int, got "
            f"{argnums!r}; put the arguments into one flat array (np.concatenate of their ravels) and "
            "split it inside f"
        )
    return derivatives.normalize_argnums(argnums, len(args))[0]


def _arguments(args: tuple, argnum: int, what: str) -> tuple:
    """args with the differentiated one as a float ndarray, or a typed error saying why not."""
    args = tuple(args)
    traced = [i for i, a in enumerate(args) if isinstance(a, Tracer)]
    if traced:
        raise InvalidInputError(
            f"{what} returns a scipy.sparse array, which cannot be differentiated "
            f"again, but argument {traced[0]} is traced by another derivative ({type(args[traced[0]]).__name__}); "
            "use sparse=False inside another derivative"
        )
    x = args[argnum]
    if not isinstance(x, (np.ndarray, np.generic, float, int)):
        if not tree.is_leaf(tree.structure(x)):
            raise InvalidInputError(
                f"{what} differentiates one array, but argument {argnum} is a "
                f"{type(x).__name__} (a pytree); flatten it into one array (np.concatenate of the leaves' "
                "ravels, adcore.tree.flatten) and rebuild the pieces inside f"
            )
    x = np.asarray(x)
    if x.dtype.kind == "c":
        raise ComplexValueError(
            f"{what} takes real arguments only, argument {argnum} has dtype {x.dtype}: "
            "split it into real and imaginary parts (one float array of both) inside f"
        )
    x = derivatives.float_input(x, f"argument {argnum}")
    return args[:argnum] + (x,) + args[argnum + 1 :]


def _check_rows(m: int, rows: int, backend: str) -> None:
    if m != rows:
        raise InvalidInputError(
            f"backend {backend!r}: f's output has {m} element(s) but the sparsity pattern has {rows} rows; "
            "a given sparsity= must have shape (f(x).size, x.size), and a prepared Jacobian needs f to "
            "return the same size as when it was prepared"
        )


def _check_columns(pattern: Any, n: int, name: str) -> None:
    if pattern.shape[1] != n:
        raise InvalidInputError(
            f"{name} has shape {pattern.shape}, but the differentiated argument has {n} elements: a "
            f"Jacobian's pattern has shape (f(x).size, {n})"
        )


def _check_local(local: Any, given: Any) -> None:
    if type(local) is not bool:
        raise InvalidInputError(f"local must be True or False, got {local!r}")
    if local and given is not None:
        raise InvalidInputError(
            "local=True asks for the pattern to be detected at the point, and sparsity= gives one: "
            "pass one or the other"
        )


def _refuse_local(local: Any, what: str) -> None:
    if local is not False:
        raise InvalidInputError(
            f"{what}: a local pattern (local=True) holds at the point it was detected at only, so it "
            "cannot be reused at new points; prepare with the global pattern (the default), or call "
            "adcore.jacobian(f, sparse=True, local=True)(x) at each point"
        )


def _check_sparse(sparse: Any, what: str, dense: str) -> None:
    if sparse is not True:
        raise InvalidInputError(
            f"{what} prepares sparse derivatives (sparse=True); for a dense one call {dense} directly"
        )


def _callable(f: Any) -> None:
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")


def _bound(f: Callable[..., Any], kwargs: dict) -> Callable[..., Any]:
    """f with its keyword arguments bound, checked to return one array."""

    def one_output(*args: Any) -> Any:
        out = f(*args, **kwargs)
        if not isinstance(out, (np.ndarray, np.generic, Tracer, float, int)):
            raise InvalidOutputError(
                f"with sparse=True, f must return one array, it returned {type(out).__name__}; "
                "concatenate the outputs' ravels into one array (np.concatenate) inside f"
            )
        return out

    return one_output


# --- backends and patterns -------------------------------------------------------------------------


def _jacobian_backend(f: Any, backend: str, options: dict) -> tuple[Backend, dict, int | None]:
    """The evaluating backend, its options checked for the method the sparse path calls, and
    the chunk size (colors per jvp call; None: derivatives.default_chunk_size)."""
    _callable(f)
    be = derivatives.get_backend(backend)
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
    method = "jvp" if _implements(be, "jvp") else "vjp" if _implements(be, "vjp") else "value_and_jacobian"
    if chunk is not None and method != "jvp":
        raise InvalidInputError(
            f"chunk_size (colors per jvp call) is for backends with a jvp; backend {backend!r} has none"
        )
    derivatives.prepare(f, backend, method, options)
    return be, options, chunk


def _inner_outer(backend: str | None, inner: str | None, outer: str | None) -> tuple[str, str]:
    inner = inner if inner is not None else backend if backend is not None else "reverse"
    outer = outer if outer is not None else backend if backend is not None else "forward"
    return inner, outer


def _hessian_backends(f: Any, inner: str, outer: str) -> tuple[Backend, Backend]:
    _callable(f)
    inner_be, outer_be = derivatives.get_backend(inner), derivatives.get_backend(outer)
    for be in (inner_be, outer_be):
        if be.pattern:
            raise InvalidInputError(
                f"backend {be.name!r} gives dependency patterns, not derivatives: call "
                "adcore.hessian_sparsity(f)(x) for the pattern, and pick differentiating backends here"
            )
    return inner_be, outer_be


def sparsity_backend() -> Backend:
    """The installed `sparsity` backend, or an error saying what to install."""
    try:
        return derivatives.get_backend(SPARSITY_BACKEND)
    except UnknownBackendError as e:
        raise MissingDependencyError(
            "sparse Jacobians and Hessians detect their pattern with the 'sparsity' backend, which is not "
            "installed: pip install adcore-sparsity (or give the pattern with sparsity=)"
        ) from e


def scipy_sparse() -> Any:
    """scipy.sparse, imported on first use (never at `import adcore`)."""
    try:
        import scipy.sparse
    except ImportError as e:  # pragma: no cover - scipy is installed wherever the plugin is
        raise MissingDependencyError("sparse Jacobians are scipy.sparse arrays: pip install scipy") from e
    return scipy.sparse


def as_pattern(given: Any, name: str, symmetric: bool = False) -> Any:
    """A given pattern as a canonical bool csr_array (every stored entry True, sorted, no
    duplicates): from any scipy.sparse matrix (its stored entries) or a 2-D bool array; a
    Hessian's is made symmetric (P | P.T: a superset, as a pattern may be)."""
    sp = scipy_sparse()
    if sp.issparse(given):
        coo = sp.coo_array(given)
        rows, cols, shape = coo.row, coo.col, coo.shape
    else:
        dense = np.asarray(given) if isinstance(given, (np.ndarray, list, tuple)) else None
        if dense is None or dense.dtype != bool or dense.ndim != 2:
            raise InvalidInputError(
                f"{name} must be a scipy.sparse matrix or a 2-D bool array of shape (f(x).size, x.size), "
                f"got {_short(given) if dense is None else _short(dense)}"
            )
        rows, cols = np.nonzero(dense)
        shape = dense.shape
    if symmetric:
        if shape[0] != shape[1]:
            raise InvalidInputError(f"{name} for a Hessian must be square, got shape {shape}")
        rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    pattern = sp.csr_array((np.ones(len(rows), dtype=bool), (rows, cols)), shape=shape)
    pattern.sum_duplicates()
    pattern.sort_indices()
    return pattern
