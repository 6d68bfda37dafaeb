"""MSELoss, NLLLoss and CrossEntropyLoss: hand-computed values always, torch's values and gradients
where torch is installed, typed errors where torch would broadcast or index out of range."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import CrossEntropyLoss, MSELoss, NLLLoss
from adcore_nn.loss import cross_entropy, nll_loss

import adcore
from adcore.errors import InvalidInputError, InvalidValueError

RNG = np.random.default_rng(0)
LOGITS = np.array([[1.0, 2.0, 0.5], [0.1, -1.0, 3.0]])
LABELS = np.array([1, 2])


def log_softmax(x):
    return x - np.log(np.sum(np.exp(x), axis=1, keepdims=True))


def test_cross_entropy_by_hand():
    lp = log_softmax(LOGITS)
    assert CrossEntropyLoss()(LOGITS, LABELS) == pytest.approx(-(lp[0, 1] + lp[1, 2]) / 2, rel=1e-14)
    w = np.array([1.0, 2.0, 3.0])
    assert CrossEntropyLoss(weight=w)(LOGITS, LABELS) == pytest.approx(
        -(2 * lp[0, 1] + 3 * lp[1, 2]) / 5, rel=1e-14
    )
    ignored = CrossEntropyLoss(ignore_index=2)(LOGITS, LABELS)
    assert ignored == pytest.approx(-lp[0, 1], rel=1e-14)
    smooth = CrossEntropyLoss(label_smoothing=0.3)(LOGITS, LABELS)
    uniform = -lp.sum(1).mean() / 3
    assert smooth == pytest.approx(0.7 * -(lp[0, 1] + lp[1, 2]) / 2 + 0.3 * uniform, rel=1e-14)
    probs = np.array([[0.2, 0.8, 0.0], [0.5, 0.25, 0.25]])
    assert CrossEntropyLoss()(LOGITS, probs) == pytest.approx(-(probs * lp).sum(1).mean(), rel=1e-14)
    np.testing.assert_allclose(
        CrossEntropyLoss(reduction="none")(LOGITS, LABELS), [-lp[0, 1], -lp[1, 2]], rtol=1e-14
    )


def test_the_gradient_of_cross_entropy_is_softmax_minus_one_hot():
    g = adcore.grad(lambda x: CrossEntropyLoss(reduction="sum")(x, LABELS))(LOGITS)
    np.testing.assert_allclose(g, np.exp(log_softmax(LOGITS)) - np.eye(3)[LABELS], rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_are_kept(dtype):
    x = LOGITS.astype(dtype)
    for loss in (CrossEntropyLoss()(x, LABELS), NLLLoss()(log_softmax(x), LABELS), MSELoss()(x, x * 2)):
        assert loss.dtype == dtype


def test_mse_and_nll_by_hand():
    assert MSELoss()(np.array([1.0, 2.0]), np.array([0.0, 4.0])) == 2.5
    assert MSELoss(reduction="sum")(np.array([1.0, 2.0]), np.array([0.0, 4.0])) == 5.0
    lp = log_softmax(LOGITS)
    assert NLLLoss()(lp, LABELS) == pytest.approx(-(lp[0, 1] + lp[1, 2]) / 2, rel=1e-14)


def test_bad_targets_are_typed_errors_naming_the_loss():
    with pytest.raises(InvalidValueError, match="MSELoss: input shape .* differ"):
        MSELoss()(np.ones((3, 1)), np.ones(3))  # torch would broadcast to (3, 3)
    with pytest.raises(InvalidValueError, match="NLLLoss: target 3 is out of range for 3 classes"):
        NLLLoss()(log_softmax(LOGITS), np.array([0, 3]))
    with pytest.raises(InvalidInputError, match="CrossEntropyLoss: a class-index target must be an integer"):
        CrossEntropyLoss()(LOGITS, np.array([True, False]))
    with pytest.raises(InvalidValueError, match="target shape"):
        CrossEntropyLoss()(LOGITS, np.array([1, 2, 0]))
    with pytest.raises(InvalidValueError, match="reduction must be one of"):
        CrossEntropyLoss(reduction="avg")
    with pytest.raises(InvalidValueError, match="weight must have one entry per class"):
        CrossEntropyLoss(weight=np.ones(2))(LOGITS, LABELS)
    assert CrossEntropyLoss()(LOGITS, LABELS) > 0  # the next call works


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_torch(dtype):
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-computed checks above still run"
    )
    functional = torch.nn.functional
    tol = 1e-5 if dtype == np.float32 else 1e-12
    x = RNG.standard_normal((6, 4, 3)).astype(dtype)
    y = RNG.integers(0, 4, (6, 3))
    y[0, 0] = -100
    w = RNG.uniform(0.5, 2, 4).astype(dtype)
    p = RNG.dirichlet(np.ones(4), (6, 3)).transpose(0, 2, 1).astype(dtype)
    for options in ({}, {"weight": w}, {"label_smoothing": 0.2}, {"weight": w, "label_smoothing": 0.1}):
        torch_options = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in options.items()}
        for reduction in ("mean", "sum", "none"):
            for target in (y, p):
                xt = torch.tensor(x, requires_grad=True)
                want = functional.cross_entropy(
                    xt, torch.tensor(target), reduction=reduction, **torch_options
                )
                got = cross_entropy(x, target, reduction=reduction, **options)
                assert got.dtype == dtype
                np.testing.assert_allclose(got, want.detach().numpy(), rtol=tol, atol=tol)
                if reduction != "none":
                    want.backward()
                    g = adcore.grad(
                        lambda v, t=target, r=reduction, o=options: cross_entropy(v, t, reduction=r, **o)
                    )(x)
                    np.testing.assert_allclose(g, xt.grad.numpy(), rtol=10 * tol, atol=tol)
    lp = np.log(RNG.dirichlet(np.ones(4), 6)).astype(dtype)
    labels = RNG.integers(0, 4, 6)
    want = functional.nll_loss(torch.tensor(lp), torch.tensor(labels), weight=torch.tensor(w))
    np.testing.assert_allclose(nll_loss(lp, labels, weight=w), want.numpy(), rtol=tol)
    unbatched = functional.cross_entropy(torch.tensor(x[0, :, 0]), torch.tensor(y[1, 1]))
    np.testing.assert_allclose(cross_entropy(x[0, :, 0], y[1, 1]), unbatched.numpy(), rtol=tol)
    xt = torch.tensor(x, requires_grad=True)
    functional.mse_loss(xt, torch.tensor(2 * x)).backward()
    np.testing.assert_allclose(adcore.grad(lambda v: MSELoss()(v, 2 * x))(x), xt.grad.numpy(), rtol=tol)


@pytest.mark.parametrize("backend", ["forward", "numeric", "symbolic"])
def test_other_backends_agree_with_reverse(backend):
    if backend not in adcore.backends():
        pytest.skip(f"{backend} is not installed")
    f = lambda x: CrossEntropyLoss(weight=np.array([1.0, 2.0, 0.5]), label_smoothing=0.1)(x, LABELS)  # noqa: E731
    rtol = 1e-7 if backend == "numeric" else 1e-12
    np.testing.assert_allclose(adcore.grad(f, backend=backend)(LOGITS), adcore.grad(f)(LOGITS), rtol=rtol)
