"""The checks of the sparse derivatives' arguments, patterns and prepared calls, each a typed error
that says what to do: one differentiated float array, one array output, a given pattern's shape, and
what a prepared derivative was made for (its `Signature`). SciPy is imported when a pattern is
built, never at import.

`engine` is what adcore's API layer hands the plugin (adcore.sparse.Engine): its argument checks,
which a plugin may not import (pyproject.toml's "plugins" contract)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.core import Tracer, frozen_value
from adcore.errors import (
    ComplexValueError,
    InvalidArgnumsError,
    InvalidInputError,
    InvalidOutputError,
    MissingDependencyError,
    StateChangedError,
)

# --- what a prepared derivative was made for ------------------------------------------------------


class Signature:
    """What a prepared derivative was made for: the number of arguments, the differentiated
    one's and the other float arguments' shapes and dtypes, and what may have shaped the pattern:
    the other arguments themselves (copies of the arrays, lists and dicts in them, so one written
    into or appended to is seen) and the constants f's ops read when it was detected (`constants`,
    (what, object, copy) from the sparsity backend: a closure's matrix, an index array)."""

    def __init__(self, engine: Any, args: tuple, argnum: int, constants: list) -> None:
        self.engine, self.argnum, self.nargs, self.constants = engine, argnum, len(args), constants
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
        args = arguments(self.engine, args, self.argnum, what)
        for i, (a, kind) in enumerate(zip(args, self.kinds)):
            if kind[0] == "float":
                self._check_float(i, a, kind[1], kind[2], what)
            elif not _same(a, kind[1]):
                raise InvalidInputError(
                    f"{what}: argument {i} differs from the one it was prepared with ({short(kind[1])}, now "
                    f"{short(a)}); arguments that are not float arrays may shape the sparsity pattern, so "
                    "they must stay the same: prepare again for the new one"
                )
        self._check_constants(what)
        return args

    def _check_constants(self, what: str) -> None:
        for where, value, copy in self.constants:
            if not _same(value, copy):
                raise StateChangedError(
                    f"{what}: a constant f read when its sparsity pattern was detected ({where}: "
                    f"{short(copy)}) has changed since, written into in place, so the pattern may no "
                    "longer hold. Prepare again after changing it; a float array whose values change "
                    "between calls may instead be passed to f as a float argument, whose values the "
                    "pattern never reads"
                )

    def _check_float(self, i: int, a: Any, shape: tuple, dtype: np.dtype, what: str) -> None:
        role = "the differentiated argument" if i == self.argnum else "a float argument"
        if not (i == self.argnum or _is_float(a)):
            raise InvalidInputError(
                f"{what}: argument {i} was {role} of shape {shape} and dtype {dtype} when prepared, now it "
                f"is {short(a)}; pass one of that shape and dtype, or prepare again"
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


def short(a: Any) -> str:
    """A few words for a value in an error message."""
    if isinstance(a, np.ndarray):
        return f"an array of shape {a.shape} and dtype {a.dtype}"
    return f"{type(a).__name__} {a!r:.40}"


# --- the call's arguments and output ----------------------------------------------------------------


def argnum(engine: Any, argnums: Any, args: tuple, what: str) -> int:
    """The one differentiated position: the sparse path takes one argument."""
    if type(argnums) is not int:
        raise InvalidArgnumsError(
            f"{what} differentiates one argument, so argnums must be an int, got "
            f"{argnums!r}; put the arguments into one flat array (np.concatenate of their ravels) and "
            "split it inside f"
        )
    return engine.normalize_argnums(argnums, len(args))[0]


def arguments(engine: Any, args: tuple, argnum: int, what: str) -> tuple:
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
    if not isinstance(x, (np.ndarray, np.generic, float, int)) and engine.is_pytree(x):
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
    x = engine.float_input(x, f"argument {argnum}")
    return args[:argnum] + (x,) + args[argnum + 1 :]


def bound(f: Callable[..., Any], kwargs: dict) -> Callable[..., Any]:
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


def check_callable(f: Any) -> None:
    if not callable(f):
        raise InvalidInputError(f"expected a function to differentiate, got {type(f).__name__} {f!r}")


def check_rows(m: int, rows: int, backend: str) -> None:
    if m != rows:
        raise InvalidInputError(
            f"backend {backend!r}: f's output has {m} element(s) but the sparsity pattern has {rows} rows; "
            "a given sparsity= must have shape (f(x).size, x.size), and a prepared Jacobian needs f to "
            "return the same size as when it was prepared"
        )


def check_columns(pattern: Any, n: int, name: str) -> None:
    if pattern.shape[1] != n:
        raise InvalidInputError(
            f"{name} has shape {pattern.shape}, but the differentiated argument has {n} elements: a "
            f"Jacobian's pattern has shape (f(x).size, {n})"
        )


# --- the options ----------------------------------------------------------------------------------------


def check_local(local: Any, given: Any) -> None:
    if type(local) is not bool:
        raise InvalidInputError(f"local must be True or False, got {local!r}")
    if local and given is not None:
        raise InvalidInputError(
            "local=True asks for the pattern to be detected at the point, and sparsity= gives one: "
            "pass one or the other"
        )


def refuse_local(local: Any, what: str) -> None:
    if local is not False:
        raise InvalidInputError(
            f"{what}: a local pattern (local=True) holds at the point it was detected at only, so it "
            "cannot be reused at new points; prepare with the global pattern (the default), or call "
            "adcore.jacobian(f, sparse=True, local=True)(x) at each point"
        )


def check_sparse(sparse: Any, what: str, dense: str) -> None:
    if sparse is not True:
        raise InvalidInputError(
            f"{what} prepares sparse derivatives (sparse=True); for a dense one call {dense} directly"
        )


# --- patterns ------------------------------------------------------------------------------------------


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
                f"got {short(given) if dense is None else short(dense)}"
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
