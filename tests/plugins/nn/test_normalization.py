"""BatchNorm1d/2d and LayerNorm: hand-computed values, torch's running-stat rule, one update per call
on the backends that run f once, typed refusals where an update cannot be right, torch's numbers."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import BatchNorm1d, BatchNorm2d, LayerNorm, MSELoss

import adcore
from adcore.errors import InvalidInputError, InvalidValueError, UnsupportedByBackendError

X = np.random.default_rng(0).normal(size=(5, 3))


def test_batch_norm_train_by_hand():
    bn = BatchNorm1d(3, dtype=np.float64)
    y = bn(X)
    mean, var = X.mean(0), X.var(0)
    np.testing.assert_allclose(y, (X - mean) / np.sqrt(var + 1e-5), rtol=1e-12)
    np.testing.assert_allclose(bn.running_mean, 0.1 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.running_var, 0.9 + 0.1 * X.var(0, ddof=1), rtol=1e-12)
    assert bn.num_batches_tracked == 1 and bn.num_batches_tracked.dtype == np.int64
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    bn.eval()
    np.testing.assert_allclose(bn(X), (X - bn.running_mean) / np.sqrt(bn.running_var + 1e-5), rtol=1e-12)
    assert bn.num_batches_tracked == 1


def test_cumulative_average_with_momentum_none():
    bn = BatchNorm1d(3, momentum=None, dtype=np.float64)
    bn(X)
    bn(2 * X)
    np.testing.assert_allclose(bn.running_mean, (X.mean(0) + 2 * X.mean(0)) / 2, rtol=1e-12)


def test_without_running_stats_uses_batch_stats_in_eval():
    bn = BatchNorm1d(3, track_running_stats=False, affine=False, dtype=np.float64).eval()
    assert bn.running_mean is None and list(bn.state_dict()) == []
    np.testing.assert_allclose(bn(X), (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-5), rtol=1e-12)


def test_layer_norm_by_hand():
    x = X.astype(np.float32)
    y = LayerNorm(3)(x)
    assert y.dtype == np.float32
    want = (X - X.mean(1, keepdims=True)) / np.sqrt(X.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    assert LayerNorm(3, bias=False).bias is None
    assert list(LayerNorm((5, 3)).state_dict()) == ["weight", "bias"]


def test_bad_inputs_are_typed_errors():
    with pytest.raises(InvalidValueError, match="BatchNorm1d"):
        BatchNorm1d(4, dtype=np.float64)(X)
    with pytest.raises(InvalidValueError, match="more than 1 value"):
        BatchNorm1d(3, dtype=np.float64)(X[:1])
    with pytest.raises(InvalidInputError, match="BatchNorm2d"):
        BatchNorm2d(3)(X)
    with pytest.raises(InvalidValueError, match="LayerNorm"):
        LayerNorm(4)(X.astype(np.float32))


def _loss(model, x):
    return MSELoss()(model(x), np.zeros_like(x))


@pytest.mark.parametrize("backend", ["reverse", "forward", "source"])
def test_one_update_per_derivative_and_the_gradient(backend):
    bn = BatchNorm1d(3, dtype=np.float64)
    bn.weight[...] = [1.0, 2.0, 0.5]
    calls = []
    bn.register_forward_hook(lambda m, a, o: calls.append(1))
    _, g = adcore.value_and_grad(_loss, argnums=(0, 1), backend=backend)(bn, X)
    assert len(calls) == 1 and bn.num_batches_tracked == 1
    np.testing.assert_allclose(bn.running_var, 0.9 + 0.1 * X.var(0, ddof=1), rtol=1e-12)
    ref = BatchNorm1d(3, dtype=np.float64)
    ref.weight[...] = bn.weight
    _, want = adcore.value_and_grad(_loss, argnums=(0, 1))(ref, X)
    np.testing.assert_allclose(g[1], want[1], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(g[0].weight, want[0].weight, rtol=1e-9, atol=1e-12)


def test_checkpoint_updates_the_running_stats_once():
    # checkpoint runs the forward again for the backward pass: that recomputation must not update the
    # running statistics a second time (it did: num_batches_tracked 2, momentum applied twice)
    bn, plain = BatchNorm1d(3, dtype=np.float64), BatchNorm1d(3, dtype=np.float64)
    _, g = adcore.value_and_grad(adcore.checkpoint(_loss), argnums=(0, 1))(bn, X)
    _, want = adcore.value_and_grad(_loss, argnums=(0, 1))(plain, X)
    assert bn.num_batches_tracked == 1
    np.testing.assert_array_equal(bn.running_mean, plain.running_mean)
    np.testing.assert_array_equal(bn.running_var, plain.running_var)
    np.testing.assert_allclose(g[1], want[1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(g[0].weight, want[0].weight, rtol=1e-12, atol=1e-14)


def test_numeric_refuses_the_update_and_works_in_eval():
    bn = BatchNorm1d(3, dtype=np.float64)
    with pytest.raises(UnsupportedByBackendError, match=r"BatchNorm1d.*numeric.*eval\(\)"):
        adcore.grad(_loss, argnums=1, backend="numeric")(bn, X)
    bn.eval()
    g = adcore.grad(_loss, argnums=1, backend="numeric")(bn, X)
    want = adcore.grad(_loss, argnums=1)(bn, X)
    np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-7)
    bn.train()
    adcore.grad(_loss, argnums=1)(bn, X)  # the next call works
    assert bn.num_batches_tracked == 1


def test_symbolic_refuses_the_update_and_works_in_eval():
    bn = BatchNorm1d(3, dtype=np.float64)
    with pytest.raises(UnsupportedByBackendError, match=r"BatchNorm1d.*eval\(\)"):
        adcore.grad(_loss, argnums=1, backend="symbolic")(bn, X)
    assert bn.num_batches_tracked == 0 and not bn.running_mean.any()
    bn.eval()
    g = adcore.grad(_loss, argnums=1, backend="symbolic")(bn, X)
    np.testing.assert_allclose(g, adcore.grad(_loss, argnums=1)(bn, X), rtol=1e-10)


def test_vmap_refuses_the_update():
    bn = BatchNorm1d(3, dtype=np.float64)
    xs = np.stack([X, X])
    with pytest.raises(UnsupportedByBackendError, match="vmap"):
        adcore.vmap(bn)(xs)
    assert bn.num_batches_tracked == 0
    out = adcore.vmap(BatchNorm1d(3, track_running_stats=False, dtype=np.float64))(xs)
    np.testing.assert_allclose(out[1], (X - X.mean(0)) / np.sqrt(X.var(0) + 1e-5), rtol=1e-12)


TOL = {np.float32: dict(rtol=2e-5, atol=2e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}


def _torch_pair(cls, torch_cls, dtype, shape, **kwargs):
    torch = pytest.importorskip("torch", reason="torch is not installed: comparing with it is skipped")
    rng = np.random.default_rng(1)
    c = shape[1]
    ours = cls(c, dtype=dtype, **kwargs)
    ours.weight[...] = rng.normal(size=c)
    ours.bias[...] = rng.normal(size=c)
    theirs = torch_cls(c, dtype=getattr(torch, np.dtype(dtype).name), **kwargs)
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in ours.state_dict().items()})
    return torch, ours, theirs, rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "shape", "momentum"), [("1d", (6, 3), 0.1), ("2d", (4, 3, 2, 2), None)])
def test_batch_norm_train_step_equals_torch(dtype, name, shape, momentum):
    """One value_and_grad in train mode: the loss, the input's and parameters' gradients and the
    running statistics equal torch's after one forward+backward."""
    cls = {"1d": BatchNorm1d, "2d": BatchNorm2d}[name]
    torch = pytest.importorskip("torch", reason="torch is not installed: comparing with it is skipped")
    torch_cls = {"1d": torch.nn.BatchNorm1d, "2d": torch.nn.BatchNorm2d}[name]
    torch, ours, theirs, x = _torch_pair(cls, torch_cls, dtype, shape, momentum=momentum)
    target = np.random.default_rng(2).normal(size=shape).astype(dtype)

    def loss(model, x):
        return MSELoss()(model(x), target)

    for _ in range(2):  # two steps: the second uses the first's running statistics nowhere, but counts
        value, (g_model, g_x) = adcore.value_and_grad(loss, argnums=(0, 1))(ours, x)
        tx = torch.from_numpy(x.copy()).requires_grad_()
        t_value = torch.nn.functional.mse_loss(theirs(tx), torch.from_numpy(target))
        t_value.backward()
        assert value.dtype == dtype
        np.testing.assert_allclose(value, t_value.item(), **TOL[dtype])
        np.testing.assert_allclose(g_x, tx.grad.numpy(), **TOL[dtype])
        np.testing.assert_allclose(g_model.weight, theirs.weight.grad.numpy(), **TOL[dtype])
        np.testing.assert_allclose(g_model.bias, theirs.bias.grad.numpy(), **TOL[dtype])
        theirs.zero_grad()
        for key, value in theirs.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[key], value.numpy(), **TOL[dtype], err_msg=key)
    assert repr(ours) == repr(theirs)
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(ours(x), theirs(torch.from_numpy(x)).detach().numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_equals_torch(dtype):
    torch = pytest.importorskip("torch", reason="torch is not installed: comparing with it is skipped")
    rng = np.random.default_rng(3)
    ours = LayerNorm((2, 3), dtype=dtype)
    ours.weight[...] = rng.normal(size=(2, 3))
    ours.bias[...] = rng.normal(size=(2, 3))
    theirs = torch.nn.LayerNorm((2, 3), dtype=getattr(torch, np.dtype(dtype).name))
    theirs.load_state_dict({k: torch.from_numpy(v.copy()) for k, v in ours.state_dict().items()})
    x = rng.normal(size=(4, 2, 3)).astype(dtype)
    w = rng.normal(size=(4, 2, 3)).astype(dtype)
    g_model, g_x = adcore.grad(lambda m, x: (m(x) * w).sum(), argnums=(0, 1))(ours, x)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    out = theirs(tx)
    (out * torch.from_numpy(w)).sum().backward()
    np.testing.assert_allclose(ours(x), out.detach().numpy(), **TOL[dtype])
    np.testing.assert_allclose(g_x, tx.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(g_model.weight, theirs.weight.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(g_model.bias, theirs.bias.grad.numpy(), **TOL[dtype])
    assert repr(ours) == repr(theirs).replace("torch.", "")


def test_layer_norm_negative_shape_is_a_typed_error():
    with pytest.raises(InvalidValueError, match="LayerNorm.*normalized_shape"):
        LayerNorm(-1)


def test_eval_mode_under_vmap_and_chunked_forward_refusal():
    bn = BatchNorm1d(3, dtype=np.float64)
    big = np.random.default_rng(2).normal(size=(1000, 3))  # forward mode's Jacobian runs f per chunk here
    with pytest.raises(UnsupportedByBackendError, match="BatchNorm1d.*forward"):
        adcore.jacobian(bn, backend="forward")(big)
    assert bn.num_batches_tracked == 0
    np.testing.assert_array_equal(bn.running_mean, np.zeros(3))
    bn.eval()  # the running statistics: no update, so vmap is fine
    out = adcore.vmap(bn)(np.stack([X, X + 1]))
    np.testing.assert_allclose(out[1], (X + 1) / np.sqrt(1 + 1e-5), rtol=1e-12)
    assert bn.num_batches_tracked == 0
