"""examples/train_digits.py: the adcore_nn CNN reaches 95% test accuracy on sklearn's digits, its first
50 losses are torch's for the same weights and batches, and its forward hooks record what each ReLU
output (its speed is the example's own printout, not a test: timed assertions fail on a loaded machine)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "train_digits.py"
RELUS = ["features.1", "features.4"]


def _load_script():
    spec = importlib.util.spec_from_file_location("train_digits", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_digits_cnn_reaches_95_percent(tmp_path):
    out = tmp_path / "curves.png"
    history = _load_script().main(["--quiet", "--out", str(out)])
    assert history["test_accuracy"][-1] >= 0.95, history["test_accuracy"]
    first_epoch = history["loss"][: history["steps_per_epoch"]]
    assert history["loss"][-1] < first_epoch[0] / 5  # it learned, not guessed
    assert list(history["activations"]) == RELUS
    assert all(len(stats) == len(history["loss"]) for stats in history["activations"].values())
    from PIL import Image

    with Image.open(out) as png:
        assert png.format == "PNG" and png.size[0] > 500


def test_the_relu_hooks_record_each_outputs_mean_and_std_at_each_training_step():
    from adcore_kernels import reference

    script = _load_script()
    history = script.train(epochs=1, seed=0, progress=False, max_steps=2)
    stats = history["activations"]
    # one record per training step and ReLU; the eval-mode forward of the test accuracy is not one
    assert list(stats) == RELUS and [len(s) for s in stats.values()] == [2, 2]
    assert all(not m._forward_hooks for m in history["model"].modules())  # the recorder removed its hooks

    # step 1 recomputed apart: the initial weights, the first batch, NumPy's reference conv and pool in float64
    x_train, y_train, _, _ = script.load_digits_split(0)
    images, _ = next(iter(script.make_loader(x_train, y_train, 32, 0)))
    w = {k: np.asarray(v, np.float64) for k, v in script.build_model(0).state_dict().items()}
    x = np.asarray(images, np.float64)
    h1 = np.maximum(
        reference.conv2d(x, w["features.0.weight"], padding=1) + w["features.0.bias"][:, None, None], 0
    )
    pooled = reference.max_pool2d(h1, 2)
    h2 = np.maximum(
        reference.conv2d(pooled, w["features.3.weight"], padding=1) + w["features.3.bias"][:, None, None], 0
    )
    for name, h in zip(RELUS, (h1, h2)):
        mean, std = stats[name][0]
        assert mean == pytest.approx(h.mean(), rel=1e-5), name
        assert std == pytest.approx(h.std(), rel=1e-5), name
    # step 2 saw the updated weights and the next batch
    assert stats["features.1"][1] != stats["features.1"][0]


def _torch_digits_cnn(torch):
    """The demo's DigitsCNN written with torch.nn (defined here: torch is optional)."""

    class TorchDigitsCNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.features = torch.nn.Sequential(
                torch.nn.Conv2d(1, 16, 3, padding=1),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
                torch.nn.Conv2d(16, 32, 3, padding=1),
                torch.nn.ReLU(),
                torch.nn.MaxPool2d(2),
            )
            self.classifier = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(128, 10))

        def forward(self, x):
            return self.classifier(self.features(x))

    return TorchDigitsCNN()


def _torch_losses(torch, script, initial, batches, lr):
    """torch.nn + torch.optim.Adam from the state dict `initial`, one step per batch: the losses."""
    model = _torch_digits_cnn(torch)
    if initial["features.0.weight"].dtype == np.float64:
        model = model.double()
    assert list(initial) == list(model.state_dict())  # torch's keys, in torch's order
    model.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in initial.items()})
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for images, labels in batches:
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(images)), torch.from_numpy(labels))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def _demo_batches(script, seed, batch_size, epochs, dtype):
    """The batches the demo's loader gives in its first epochs (a fresh loader, the same seed), copied."""
    x_train, y_train, _, _ = script.load_digits_split(seed)
    loader = script.make_loader(x_train.astype(dtype), y_train, batch_size, seed)
    return [(np.array(x), np.array(y)) for _ in range(epochs) for x, y in loader]


def test_the_first_50_losses_are_torchs_for_the_same_weights_and_batches():
    """In float64, where rounding cannot drive two runs apart: they agree to ~1e-11. (In float32 they
    separate by ~1e-2 within 50 steps: the second convolution's weight gradient, by winograd (what
    algorithm="auto" picks for 16 -> 32 channels), is rounding noise of ~1e-8 where torch's is exactly
    0 (dead input channels), and Adam's first steps move each weight by lr * sign(gradient), noise or
    not. With im2col the float32 runs agree to ~3e-6; the float32 test below checks the first loss.)"""
    torch = pytest.importorskip(
        "torch",
        reason="torch is not installed: the demo's losses are not compared with torch.nn + torch.optim.Adam",
    )
    script = _load_script()
    steps, batch_size, lr, seed = 50, 32, 3e-3, 0
    history = script.train(
        epochs=2, batch_size=batch_size, lr=lr, seed=seed, progress=False, max_steps=steps, dtype=np.float64
    )
    assert len(history["loss"]) == steps  # an epoch is 43 steps: the second epoch's batches are compared too
    initial = script.build_model(seed, np.float64).state_dict()  # the same draw as train's: manual_seed(seed)
    batches = _demo_batches(script, seed, batch_size, 2, np.float64)[:steps]
    np.testing.assert_allclose(
        history["loss"], _torch_losses(torch, script, initial, batches, lr), rtol=0, atol=1e-8
    )


def test_the_first_float32_loss_is_torchs_for_the_same_weights_and_batch():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the demo's first loss is not compared"
    )
    script = _load_script()
    history = script.train(epochs=1, seed=0, progress=False, max_steps=1)
    batches = _demo_batches(script, 0, 32, 1, np.float32)[:1]
    assert batches[0][0].dtype == np.float32
    expected = _torch_losses(torch, script, script.build_model(0).state_dict(), batches, 3e-3)
    np.testing.assert_allclose(history["loss"], expected, rtol=0, atol=1e-6)
