"""Checks shared by the adcore_nn layer tests: gradients of a layer on a backend, and the same layer in torch.

A layer's "loss" is <cot, layer(x)> with a fixed random cotangent, so every output entry matters.
"""

from __future__ import annotations

import numpy as np
import pytest

import adcore
import adcore.numpy as anp


def cotangent(shape, dtype, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def layer_grads(model, x, cot, backend="reverse", wrt_input=True):
    """(d/d params as {name: array}, d/dx or None) of sum(cot * model(x)) on backend."""

    def loss(m, x):
        return anp.sum(m(x) * cot)

    if not model.state_dict():  # a layer without parameters: only the input to differentiate
        return {}, adcore.grad(loss, argnums=1, backend=backend)(model, x)
    if wrt_input:
        g_model, g_x = adcore.grad(loss, argnums=(0, 1), backend=backend)(model, x)
    else:
        g_model, g_x = adcore.grad(loss, backend=backend)(model, x), None
    return dict(g_model.named_parameters()), g_x


def assert_backends_agree(model, x, backends=("forward",), rtol=1e-10, wrt_input=True):
    """Each backend's gradient equals reverse's (float64 x and model: rounding only)."""
    cot = cotangent(np.shape(model(x)), x.dtype)
    ref_params, ref_x = layer_grads(model, x, cot, "reverse", wrt_input)
    for backend in backends:
        params, gx = layer_grads(model, x, cot, backend, wrt_input)
        assert params.keys() == ref_params.keys()
        for name in params:
            np.testing.assert_allclose(
                params[name], ref_params[name], rtol=rtol, atol=rtol, err_msg=f"{backend} {name}"
            )
        if wrt_input:
            np.testing.assert_allclose(gx, ref_x, rtol=rtol, atol=rtol, err_msg=f"{backend} input")


def torch_or_skip():
    return pytest.importorskip("torch", reason="torch is not installed: the comparison with torch is skipped")


def assert_matches_torch(model, torch_model, x, rtol=None, wrt_input=True):
    """Same weights (loaded into torch from model.state_dict(), so the keys must be torch's), same input:
    outputs, input gradient and each parameter's gradient agree to rounding."""
    torch = torch_or_skip()
    dtype = model_dtype(model) or x.dtype.type
    rtol = rtol if rtol is not None else (2e-5 if dtype == np.float32 else 1e-12)
    torch_model = torch_model.to({np.float32: torch.float32, np.float64: torch.float64}[dtype])
    torch_model.load_state_dict(
        {k: torch.from_numpy(np.array(v)) for k, v in model.state_dict().items()}, strict=True
    )
    torch_model.zero_grad()
    tx = torch.from_numpy(np.array(x))
    wrt_input = wrt_input and x.dtype.kind == "f"
    if wrt_input:
        tx.requires_grad_(True)
    ty = torch_model(tx)
    y = model(x)
    assert y.dtype == ty.detach().numpy().dtype
    atol = rtol * max(1.0, float(np.abs(ty.detach().numpy()).max()))
    np.testing.assert_allclose(y, ty.detach().numpy(), rtol=rtol, atol=atol, err_msg="output")
    cot = cotangent(y.shape, y.dtype)
    (ty * torch.from_numpy(cot)).sum().backward()
    params, gx = layer_grads(model, x, cot, "reverse", wrt_input)
    tparams = dict(torch_model.named_parameters())
    assert params.keys() == tparams.keys()
    for name, g in params.items():
        tg = tparams[name].grad.numpy()
        assert g.dtype == tg.dtype, name
        np.testing.assert_allclose(
            g, tg, rtol=rtol, atol=rtol * max(1.0, float(np.abs(tg).max())), err_msg=name
        )
    if wrt_input:
        tg = tx.grad.numpy()
        assert gx.dtype == tg.dtype
        np.testing.assert_allclose(
            gx, tg, rtol=rtol, atol=rtol * max(1.0, float(np.abs(tg).max())), err_msg="input"
        )


def model_dtype(model):
    """The dtype of the model's parameters; None for a layer without any."""
    state = model.state_dict()
    return next(iter(state.values())).dtype.type if state else None
