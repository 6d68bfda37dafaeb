"""Train a small CNN on scikit-learn's digits (8x8 handwritten digits, bundled: no download).

    python examples/train_digits.py [--epochs 12] [--out digits_training.png] [--seed 0] [--quiet]

The model is an `adcore_nn.Module`, written as a torch user writes one: conv 3x3 (1 -> 16) - ReLU -
max pool 2 - conv 3x3 (16 -> 32) - ReLU - max pool 2 - flatten - linear (128 -> 10), with torch's
default initialisation (`adcore_nn.manual_seed(seed)`). The batches come from an
`adcore_nn.data.DataLoader` over an `ArrayDataset` (shuffled, seeded: the same batches every run).
`adcore.value_and_grad` differentiates the mean cross-entropy (`CrossEntropyLoss`) with respect to the model itself, a
pytree, and returns a model-shaped gradient; adcore-kernels' Adam takes the model and that gradient
and updates the parameters in place. A forward hook on each ReLU records the mean and standard
deviation of its output at every training step (a dead or exploding layer shows there first); the
script plots them beside the loss and the test accuracy. It reaches about 96% test accuracy in a
few seconds on 2 cores. Needs `pip install 'adcore-kernels[examples]'` (scikit-learn, matplotlib).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import adcore_nn as nn
import numpy as np
from adcore_kernels.optim import Adam
from adcore_nn.data import ArrayDataset, DataLoader

import adcore


class DigitsCNN(nn.Module):
    """Two convolution blocks and a linear classifier: (N, 1, 8, 8) images -> (N, 10) logits."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (N, 16, 4, 4)
            nn.Conv2d(16, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (N, 32, 2, 2)
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(128, 10))

    def forward(self, x):
        return self.classifier(self.features(x))


class ActivationStats:
    """Forward hooks on every ReLU of a model: the mean and std of its output at each training call.

    `stats[name]` is a list of (mean, std) pairs, one per forward call in training mode (calls in
    eval mode, such as measuring the test accuracy, are not training steps and are not recorded).
    Under `adcore.value_and_grad` the hook sees the traced output: `adcore.concrete` is its value.
    """

    def __init__(self, model: nn.Module) -> None:
        self.stats: dict[str, list[tuple[float, float]]] = {}
        self.handles = []
        for name, module in model.named_modules():
            if isinstance(module, nn.ReLU):
                self.stats[name] = []
                self.handles.append(module.register_forward_hook(self._recorder(name)))

    def _recorder(self, name: str):
        def hook(module, args, output):
            if module.training:
                value = np.asarray(adcore.concrete(output))
                self.stats[name].append((float(value.mean()), float(value.std())))

        return hook

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def load_digits_split(seed: int) -> tuple[np.ndarray, ...]:
    """(x_train, y_train, x_test, y_test): images (N, 1, 8, 8) float32 in [0, 1], a stratified 75/25 split."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None, :, :]
    x_train, x_test, y_train, y_test = train_test_split(
        images, digits.target, test_size=0.25, random_state=seed, stratify=digits.target
    )
    return x_train, y_train, x_test, y_test


def build_model(seed: int, dtype: type = np.float32) -> DigitsCNN:
    """The CNN with torch's default initialisation, drawn from `adcore_nn.manual_seed(seed)`, in dtype."""
    nn.manual_seed(seed)
    model = DigitsCNN()
    return model.double() if np.dtype(dtype) == np.float64 else model


def make_loader(x: np.ndarray, y: np.ndarray, batch_size: int, seed: int) -> DataLoader:
    """Shuffled batches of (images, labels), the same for a given seed (and for any num_workers)."""
    return DataLoader(ArrayDataset(x, y), batch_size=batch_size, shuffle=True, seed=seed)


def loss_fn(model: nn.Module, images, labels):
    """The mean cross-entropy of the model's logits: a function of the model, a pytree."""
    return nn.CrossEntropyLoss()(model(images), labels)


def accuracy(model: nn.Module, images: np.ndarray, labels: np.ndarray) -> float:
    model.eval()
    try:
        return float(np.mean(np.argmax(model(images), axis=1) == labels))
    finally:
        model.train()


def train(
    epochs: int = 12,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    max_steps: int | None = None,
    dtype: type = np.float32,
) -> dict:
    """Train and return the history: per-step losses and ReLU statistics, per-epoch test accuracies,
    seconds, and the trained model. max_steps stops early (after that many steps) and dtype=np.float64
    trains in double precision: the tests compare those runs with torch's."""
    from rich.progress import Progress

    x_train, y_train, x_test, y_test = (
        a.astype(dtype) if a.dtype.kind == "f" else a for a in load_digits_split(seed)
    )
    model = build_model(seed, dtype)
    loader = make_loader(x_train, y_train, batch_size, seed)
    optimizer = Adam(model, lr=lr)  # the model is a pytree of its parameters: updated in place
    recorder = ActivationStats(model)
    value_and_grad = adcore.value_and_grad(loss_fn)
    history: dict = {"loss": [], "test_accuracy": [], "steps_per_epoch": len(loader)}

    start = time.perf_counter()
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("training", total=epochs * len(loader))
        for epoch in range(epochs):
            for images, labels in loader:
                value, grads = value_and_grad(model, images, labels)  # grads: a DigitsCNN of arrays
                optimizer.step(grads)
                history["loss"].append(float(value))
                bar.update(
                    task, advance=1, description=f"epoch {epoch + 1}/{epochs}  loss {float(value):.3f}"
                )
                if max_steps is not None and len(history["loss"]) == max_steps:
                    break
            history["test_accuracy"].append(accuracy(model, x_test, y_test))
            if progress:
                relus = "  ".join(f"{s[-1][0]:.2f}/{s[-1][1]:.2f}" for s in recorder.stats.values())
                bar.console.print(
                    f"epoch {epoch + 1:2d}  test accuracy {history['test_accuracy'][-1]:.2%}  "
                    f"ReLU mean/std {relus}"
                )
            if max_steps is not None and len(history["loss"]) == max_steps:
                break
    history["seconds"] = time.perf_counter() - start
    history["activations"] = recorder.stats
    history["model"] = model
    recorder.remove()
    return history


def plot(history: dict, out: Path) -> None:
    """The loss per step, the ReLUs' statistics per step and the test accuracy per epoch, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, middle, right) = plt.subplots(1, 3, figsize=(15, 4))
    left.plot(history["loss"], linewidth=0.8)
    left.set(title="training loss (mean cross-entropy per batch)", xlabel="step", yscale="log")
    for name, stats in history["activations"].items():
        mean, std = np.array(stats).T
        (line,) = middle.plot(mean, linewidth=0.8, label=f"ReLU {name} mean")
        middle.plot(std, linewidth=0.8, linestyle="--", color=line.get_color(), label=f"ReLU {name} std")
    middle.set(title="activations (forward hooks)", xlabel="step")
    middle.legend(fontsize="small")
    epochs = np.arange(1, len(history["test_accuracy"]) + 1)
    right.plot(epochs, np.array(history["test_accuracy"]) * 100, marker="o")
    right.set(title="test accuracy", xlabel="epoch", ylabel="%")
    right.axhline(95, color="grey", linestyle=":", linewidth=1)
    fig.suptitle(f"CNN on sklearn digits with adcore_nn ({history['seconds']:.1f} s)")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("digits_training.png"), help="where the PNG goes")
    parser.add_argument("--quiet", action="store_true", help="no progress bar or per-epoch lines")
    args = parser.parse_args(argv)
    history = train(args.epochs, seed=args.seed, progress=not args.quiet)
    plot(history, args.out)
    print(
        f"test accuracy {history['test_accuracy'][-1]:.2%} after {args.epochs} epochs "
        f"in {history['seconds']:.1f} s; curves in {args.out}"
    )
    return history


if __name__ == "__main__":
    main()
