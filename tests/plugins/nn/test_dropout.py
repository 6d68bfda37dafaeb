"""Dropout: torch's scaling, eval identity, p=1 zeros, one mask per call from the explicit generator,
the gradient with that mask on the backends that run f once, typed refusals on numeric and vmap."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import Dropout

import adcore
from adcore.errors import InvalidInputError, InvalidValueError, UnsupportedByBackendError

X = np.arange(1.0, 13.0).reshape(3, 4)


def test_mask_scaling_and_generator():
    y = Dropout(0.25, generator=np.random.default_rng(7))(X)
    keep = np.random.default_rng(7).random(X.shape) >= 0.25
    np.testing.assert_array_equal(y, np.where(keep, X * (1 / 0.75), 0.0))  # torch: x * (mask / (1-p))
    assert Dropout(0.25)(X.astype(np.float32)).dtype == np.float32


def test_eval_identity_p1_zeros_and_inplace():
    assert Dropout().eval()(X) is X
    np.testing.assert_array_equal(Dropout(1.0)(X), np.zeros_like(X))
    x = X.copy()
    out = Dropout(0.5, inplace=True, generator=np.random.default_rng(1))(x)
    assert out is x and (x == 0).any()
    assert repr(Dropout(0.1)) == "Dropout(p=0.1, inplace=False)"


def test_bad_arguments():
    with pytest.raises(InvalidValueError, match="Dropout"):
        Dropout(1.5)
    with pytest.raises(InvalidInputError, match="generator"):
        Dropout(generator=np.random.RandomState(0))
    with pytest.raises(InvalidInputError, match="Dropout"):
        Dropout()(np.arange(3))
    frozen = X.copy()
    frozen.flags.writeable = False
    with pytest.raises(InvalidValueError, match=r"Dropout\(inplace=True\): the input array is read-only"):
        Dropout(inplace=True)(frozen)
    np.testing.assert_array_equal(frozen, X)


def _squares(x, drop):
    return (drop(x) ** 2).sum()


@pytest.mark.parametrize("backend", ["reverse", "forward", "source"])
def test_one_mask_per_derivative(backend):
    drop = Dropout(0.5, generator=np.random.default_rng(3))
    g = adcore.grad(_squares, backend=backend)(X, drop)
    keep = np.random.default_rng(3).random(X.shape) >= 0.5
    np.testing.assert_allclose(g, np.where(keep, 2 * X * 4, 0.0), rtol=1e-12)


def test_numeric_and_vmap_refuse_and_the_next_call_works():
    drop = Dropout(0.5, generator=np.random.default_rng(3))
    with pytest.raises(UnsupportedByBackendError, match=r"Dropout.*numeric.*eval\(\)"):
        adcore.grad(lambda x: drop(x).sum(), backend="numeric")(X)
    with pytest.raises(UnsupportedByBackendError, match="Dropout.*vmap"):
        adcore.vmap(drop)(X)
    drop.eval()
    np.testing.assert_allclose(adcore.grad(lambda x: drop(x).sum(), backend="numeric")(X), np.ones_like(X))
    drop.train()
    assert (adcore.grad(lambda x: drop(x).sum())(X) == 0).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scaling_equals_torch(dtype):
    """torch's masks come from its own generator; the kept values' scale and the zeros are compared."""
    torch = pytest.importorskip("torch", reason="torch is not installed: comparing with it is skipped")
    x = X.astype(dtype)
    theirs = torch.nn.Dropout(0.3)(torch.from_numpy(x)).numpy()
    ours = Dropout(0.3, generator=np.random.default_rng(0))(x)
    assert ours.dtype == theirs.dtype == dtype
    np.testing.assert_array_equal(ours[ours != 0], (x * dtype(1 / 0.7))[ours != 0])
    np.testing.assert_array_equal(theirs[theirs != 0], (x * dtype(1 / 0.7))[theirs != 0])
    np.testing.assert_array_equal(torch.nn.Dropout(1.0)(torch.from_numpy(x)).numpy(), Dropout(1.0)(x))


def test_gradient_is_the_output_mask_over_keep_probability():
    """The pullback's gradient is the mask recovered from the output (out != 0) times 1 / (1 - p), exactly."""
    drop = Dropout(0.25, generator=np.random.default_rng(7))
    x = np.random.default_rng(1).uniform(1.0, 2.0, size=(50, 8))  # no zeros: out == 0 only where dropped
    out, pullback = adcore.vjp(drop, x)
    (g,) = pullback(np.ones_like(out))
    kept = out != 0
    assert 0 < kept.sum() < kept.size
    np.testing.assert_array_equal(out, np.where(kept, x * (1 / 0.75), 0.0))
    np.testing.assert_array_equal(g, np.where(kept, 1 / 0.75, 0.0))


def test_chunked_forward_jacobian_refuses_and_checkpoint_is_a_typed_error():
    """forward mode's Jacobian of a large input runs f once per chunk of tangents (one mask each); checkpoint
    runs f again in the backward pass (another mask): both are typed errors, never a mixed-mask derivative."""
    drop = Dropout(0.5, generator=np.random.default_rng(3))
    big = np.ones(3000)
    with pytest.raises(UnsupportedByBackendError, match="Dropout.*forward"):
        adcore.jacobian(drop, backend="forward")(big)
    with pytest.raises(adcore.AdcoreError):
        adcore.grad(lambda x: adcore.checkpoint(drop)(x).sum())(X)
    g = adcore.grad(lambda x: drop(x).sum())(X)  # the next call works
    assert set(np.unique(g)) <= {0.0, 2.0}


def test_sparsity_detection_refuses_in_train_mode():
    """A pattern detected with one mask, reused by prepare_jacobian for calls with other masks, would miss
    entries silently: refused; in eval mode the pattern is the identity's."""
    drop = Dropout(0.5, generator=np.random.default_rng(0))
    x = np.ones(30)
    with pytest.raises(UnsupportedByBackendError, match="Dropout.*sparsity"):
        adcore.prepare_jacobian(drop, x)
    with pytest.raises(UnsupportedByBackendError, match="Dropout.*sparsity"):
        adcore.jacobian_sparsity(drop)(x)
    drop.eval()
    assert adcore.jacobian_sparsity(drop)(x).nnz == 30


def test_symbolic_refuses_in_train_mode():
    """symbolic caches the derivative it built from the first call: its mask would serve every later call."""
    drop = Dropout(0.5, generator=np.random.default_rng(0))
    grad = adcore.grad(lambda x: drop(x).sum(), backend="symbolic")
    with pytest.raises(UnsupportedByBackendError, match="Dropout.*symbolic"):
        grad(X)
    drop.eval()
    np.testing.assert_array_equal(grad(X), np.ones_like(X))
