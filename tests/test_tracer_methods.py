"""A traced value's ndarray methods and NumPy's ufunc methods on it (adcore/core.py): each gives
NumPy's value and the derivative numeric finds, on reverse and forward; indices come back plain;
what has no op is refused by its real name."""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidValueError, TracerConversionError, UnsupportedFunctionError
from adcore.numpy_dispatch import ufunc_name
from adcore.plugins import get_registry

RNG = np.random.default_rng(17)
X = RNG.normal(size=(3, 4))  # distinct values, away from clip's bounds below
W = RNG.normal(size=(4,))
TRACING = ["reverse", "forward"]

# (name, f): f runs on a plain array (NumPy's meaning) and on a traced one (adcore's)
METHODS = [
    ("sum", lambda x: x.sum(1)),
    ("sum dtype where", lambda x: x.sum(0, np.float64, keepdims=True, where=X > 0)),
    ("mean", lambda x: x.mean(axis=0)),
    ("mean where", lambda x: x.mean(1, where=X < 1)),
    ("prod", lambda x: x.prod(1)),
    ("max", lambda x: x.max(0)),
    ("min", lambda x: x.min(keepdims=True)),
    ("std", lambda x: x.std(1, ddof=1)),
    ("var", lambda x: x.var(axis=0)),
    ("cumsum", lambda x: x.cumsum(1)),
    ("cumsum flat", lambda x: x.cumsum()),
    ("cumprod", lambda x: x.cumprod(0)),
    ("reshape", lambda x: x.reshape(2, 6)),
    ("reshape tuple", lambda x: x.reshape((6, -1))),
    ("transpose", lambda x: x.transpose()),
    ("transpose axes", lambda x: x[None].transpose(2, 0, 1)),
    ("T", lambda x: x.T),
    ("mT", lambda x: x[None].mT),
    ("swapaxes", lambda x: x.swapaxes(0, 1)),
    ("ravel", lambda x: x.ravel()),
    ("flatten", lambda x: x.flatten()),
    ("astype", lambda x: x.astype(np.float64)),
    ("copy", lambda x: x.copy()),
    ("dot", lambda x: x.dot(W)),
    ("clip", lambda x: x.clip(-0.5, 0.5)),
    ("clip max", lambda x: x.clip(max=0.2)),
    ("squeeze", lambda x: x[:, None, :1].squeeze()),
    ("repeat", lambda x: x.repeat(2, axis=0)),
    ("take", lambda x: x.take([0, 5, 5, 11])),
    ("diagonal", lambda x: x.diagonal(1)),
    ("trace", lambda x: x.trace()),
    ("round", lambda x: x.round(1)),
    ("np.sort stable", lambda x: np.sort(x, axis=0, stable=True)),
    ("np.sort kind", lambda x: np.sort(x, axis=None, kind="quicksort")),
]


def _as_sum(f):
    cot = {}

    def loss(x):
        out = f(x)
        if "w" not in cot:
            cot["w"] = np.random.default_rng(0).normal(size=np.shape(out))
        return anp.sum(out * cot["w"])

    return loss


@pytest.mark.parametrize("backend", TRACING)
@pytest.mark.parametrize("name, f", METHODS, ids=[m[0] for m in METHODS])
def test_method_gives_numpys_value_and_the_numeric_derivative(backend, name, f):
    values = {}

    def keep(x):
        values["out"] = adcore.concrete(f(x))
        return f(x)

    loss = _as_sum(keep)
    g = adcore.grad(loss, backend=backend)(X)
    np.testing.assert_allclose(values["out"], f(X), rtol=1e-14)
    np.testing.assert_allclose(g, adcore.grad(_as_sum(f), backend="numeric")(X), atol=1e-7)


@pytest.mark.parametrize("backend", TRACING)
def test_ptp_method(backend):
    # ndarray.ptp is gone from NumPy 2; the traced value keeps it, as np.ptp
    g = adcore.grad(lambda x: anp.sum(x.ptp(axis=1)), backend=backend)(X)
    expected = np.zeros_like(X)
    expected[np.arange(3), X.argmax(axis=1)] += 1
    expected[np.arange(3), X.argmin(axis=1)] -= 1
    np.testing.assert_array_equal(g, expected)


# --- ufunc methods ---------------------------------------------------------------------------------

UFUNC_METHODS = [
    ("add.reduce", lambda x: np.add.reduce(x)),  # axis 0 by default, as NumPy's
    ("add.reduce axis keepdims", lambda x: np.add.reduce(x, axis=1, keepdims=True)),
    ("add.reduce None", lambda x: np.add.reduce(x, axis=None)),
    ("add.accumulate", lambda x: np.add.accumulate(x)),
    ("add.accumulate axis", lambda x: np.add.accumulate(x, axis=1)),
    ("multiply.reduce", lambda x: np.multiply.reduce(x, axis=1)),
    ("multiply.accumulate", lambda x: np.multiply.accumulate(x, axis=-1)),
    ("maximum.reduce", lambda x: np.maximum.reduce(x)),
    ("minimum.reduce", lambda x: np.minimum.reduce(x, axis=1)),
    ("multiply.outer", lambda x: np.multiply.outer(x, W)),
    ("subtract.outer plain first", lambda x: np.subtract.outer(W, x)),
    ("add.outer of itself", lambda x: np.add.outer(x[0], x[1])),
    ("power.outer", lambda x: np.power.outer(W**2 + 1, x[0])),
    ("maximum.outer", lambda x: np.maximum.outer(x[:, 0], x[0])),
]


@pytest.mark.parametrize("backend", TRACING)
@pytest.mark.parametrize("name, f", UFUNC_METHODS, ids=[m[0] for m in UFUNC_METHODS])
def test_ufunc_method_is_its_op(backend, name, f):
    values = {}

    def keep(x):
        values["out"] = adcore.concrete(f(x))
        return f(x)

    g = adcore.grad(_as_sum(keep), backend=backend)(X)
    np.testing.assert_allclose(values["out"], f(X), rtol=1e-14)
    np.testing.assert_allclose(g, adcore.grad(_as_sum(f), backend="numeric")(X), atol=1e-7)


def test_comparison_outer_gives_plain_booleans():
    seen = {}

    def f(x):
        seen["mask"] = np.greater.outer(x[0], x[1])
        return anp.sum(x)

    adcore.grad(f)(X)
    assert type(seen["mask"]) is np.ndarray and seen["mask"].dtype == bool
    np.testing.assert_array_equal(seen["mask"], np.greater.outer(X[0], X[1]))


# --- indices -----------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", TRACING)
def test_where_with_one_argument_and_nonzero_give_plain_indices(backend):
    seen = {}

    def f(x):
        seen["where"] = np.where(x > 0)
        seen["nonzero"] = x.nonzero()
        seen["np.nonzero"] = np.nonzero(x)
        seen["argwhere"] = np.argwhere(x > 0.5)
        return anp.sum(x[np.where(x > 0)] ** 2)

    g = adcore.grad(f, backend=backend)(X)
    np.testing.assert_array_equal(seen["where"], np.where(X > 0))
    np.testing.assert_array_equal(seen["nonzero"], np.nonzero(X))
    np.testing.assert_array_equal(seen["np.nonzero"], np.nonzero(X))
    np.testing.assert_array_equal(seen["argwhere"], np.argwhere(X > 0.5))
    assert all(isinstance(i, np.ndarray) and i.dtype.kind == "i" for i in seen["where"])
    np.testing.assert_array_equal(g, np.where(X > 0, 2 * X, 0.0))


def test_where_with_one_argument_on_a_plain_array_is_numpys():
    np.testing.assert_array_equal(np.where(X > 0), np.nonzero(X > 0))


# --- refusals, by name ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "f, error, words",
    [
        (lambda x: x.sort(), UnsupportedFunctionError, ["x.sort()", "in place", "np.sort"]),
        (lambda x: np.add.reduceat(x, [0, 2]), UnsupportedFunctionError, ["numpy.add.reduceat"]),
        (lambda x: np.add.at(x, [0], 1.0), UnsupportedFunctionError, ["numpy.add.at"]),
        (lambda x: np.add.reduce(x, initial=1.0), UnsupportedFunctionError, ["numpy.add.reduce", "initial"]),
        (lambda x: np.subtract.reduce(x), UnsupportedFunctionError, ["numpy.subtract.reduce"]),
        (lambda x: np.divide.accumulate(x), UnsupportedFunctionError, ["numpy.divide.accumulate"]),
        (lambda x: x.sum(out=np.zeros(4)), TracerConversionError, ["x.sum(..., out=z)"]),
        (lambda x: x.var(dtype=np.float32), UnsupportedFunctionError, ["var", "dtype=float32"]),
        (lambda x: x.sum(dtype=np.int64), InvalidValueError, ["op 'sum'", "dtype=int64"]),
        (lambda x: x.std(ddof=12), InvalidValueError, ["op 'std'", "ddof=12"]),
        (lambda x: x.max(initial=3.0), UnsupportedFunctionError, ["x.max(..., initial=...)"]),
        (lambda x: x.var(mean=np.zeros(1)), UnsupportedFunctionError, ["x.var(..., mean=...)"]),
    ],
)
def test_what_has_no_op_is_refused_by_name(f, error, words):
    with pytest.raises(error) as info:
        adcore.grad(lambda x: anp.sum(f(x)))(X)
    assert all(w in str(info.value) for w in words), str(info.value)


@pytest.mark.parametrize("name", ["erfc", "gammaln"])
def test_a_scipy_ufunc_is_named_by_its_module(name):
    special = pytest.importorskip("scipy.special")
    assert ufunc_name(getattr(special, name)) == f"scipy.special.{name}"


def test_a_scipy_ufunc_with_no_op_is_refused_by_its_real_name():
    special = pytest.importorskip("scipy.special")
    # the scipy plugin gives some of them ops (looked up lazily): take one it does not
    registry = get_registry()
    name = next(
        n
        for n in ("erfc", "gammaln", "spence", "kolmogorov", "ellipkm1")
        if registry.numpy_op(getattr(special, n)) is None
    )
    with pytest.raises(UnsupportedFunctionError) as info:
        adcore.grad(lambda x: anp.sum(getattr(special, name)(x)))(np.abs(X) + 0.5)
    assert f"scipy.special.{name} has no adcore op" in str(info.value)
    assert "numpy." + name not in str(info.value)


def test_a_numpy_ufunc_is_named_numpy():
    assert ufunc_name(np.nextafter) == "numpy.nextafter"
