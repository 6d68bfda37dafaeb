"""Train a small CNN on scikit-learn's digits (8x8 handwritten digits, bundled: no download).

    python examples/train_digits.py [--epochs 12] [--out digits_training.png] [--seed 0]

conv 3x3 (1 -> 16) - relu - max pool 2 - conv 3x3 (16 -> 32) - relu - max pool 2 - dense
(128 -> 10) - log_softmax, trained with Adam on the mean negative log-likelihood through
adcore's reverse backend; the convolutions, pools and the Adam step are adcore-kernels'
numba kernels. It prints the test accuracy after each epoch (a progress bar on the way)
and saves the loss and accuracy curves as a PNG. It reaches about 97-98% test accuracy
in well under a minute on 2 cores. Needs `pip install 'adcore-kernels[examples]'`
(scikit-learn, matplotlib).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from adcore_kernels import conv2d, max_pool2d
from adcore_kernels.optim import Adam

import adcore
import adcore.numpy as anp

PARAM_NAMES = ("conv1_w", "conv1_b", "conv2_w", "conv2_b", "dense_w", "dense_b")


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


def init_params(rng: np.random.Generator) -> list[np.ndarray]:
    """He-initialised weights, zero biases, float32 and C-contiguous (as the optimizer requires)."""

    def he(shape: tuple[int, ...], fan_in: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    return [
        he((16, 1, 3, 3), 9),
        np.zeros(16, np.float32),
        he((32, 16, 3, 3), 16 * 9),
        np.zeros(32, np.float32),
        he((128, 10), 128),
        np.zeros(10, np.float32),
    ]


def log_probs(params: Sequence, images: np.ndarray):
    """The network: log-probabilities of the ten classes, (N, 10)."""
    conv1_w, conv1_b, conv2_w, conv2_b, dense_w, dense_b = params
    h = anp.relu(conv2d(images, conv1_w, padding=1) + anp.reshape(conv1_b, (1, -1, 1, 1)))
    h = max_pool2d(h, 2)  # (N, 16, 4, 4)
    h = anp.relu(conv2d(h, conv2_w, padding=1) + anp.reshape(conv2_b, (1, -1, 1, 1)))
    h = max_pool2d(h, 2)  # (N, 32, 2, 2)
    h = anp.reshape(h, (images.shape[0], -1))
    return anp.log_softmax(anp.matmul(h, dense_w) + dense_b, axis=1)


def loss(*args):
    """Mean negative log-likelihood of the labels: loss(*params, images, one_hot)."""
    *params, images, one_hot = args
    return -anp.mean(anp.sum(log_probs(params, images) * one_hot, axis=1))


def accuracy(params: Sequence, images: np.ndarray, labels: np.ndarray) -> float:
    return float(np.mean(np.argmax(log_probs(params, images), axis=1) == labels))


def train(
    epochs: int = 12, batch_size: int = 32, lr: float = 3e-3, seed: int = 0, progress: bool = True
) -> dict:
    """Train and return the history: per-step losses, per-epoch test accuracies, seconds."""
    from rich.progress import Progress

    x_train, y_train, x_test, y_test = load_digits_split(seed)
    rng = np.random.default_rng(seed)
    params = init_params(rng)
    optimizer = Adam(params, lr=lr)
    value_and_grad = adcore.value_and_grad(loss, argnums=tuple(range(len(params))))
    one_hot = np.eye(10, dtype=np.float32)[y_train]
    steps_per_epoch = -(-len(x_train) // batch_size)
    history: dict = {"loss": [], "test_accuracy": [], "steps_per_epoch": steps_per_epoch}

    start = time.perf_counter()
    with Progress(disable=not progress, transient=True) as bar:
        task = bar.add_task("training", total=epochs * steps_per_epoch)
        for epoch in range(epochs):
            order = rng.permutation(len(x_train))
            for first in range(0, len(order), batch_size):
                batch = order[first : first + batch_size]
                value, grads = value_and_grad(*params, x_train[batch], one_hot[batch])
                optimizer.step(grads)
                history["loss"].append(float(value))
                bar.update(
                    task, advance=1, description=f"epoch {epoch + 1}/{epochs}  loss {float(value):.3f}"
                )
            history["test_accuracy"].append(accuracy(params, x_test, y_test))
            if progress:
                bar.console.print(f"epoch {epoch + 1:2d}  test accuracy {history['test_accuracy'][-1]:.2%}")
    history["seconds"] = time.perf_counter() - start
    return history


def plot(history: dict, out: Path) -> None:
    """The loss per step and the test accuracy per epoch, side by side, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(history["loss"], linewidth=0.8)
    left.set(title="training loss (mean NLL per batch)", xlabel="step", yscale="log")
    epochs = np.arange(1, len(history["test_accuracy"]) + 1)
    right.plot(epochs, np.array(history["test_accuracy"]) * 100, marker="o")
    right.set(title="test accuracy", xlabel="epoch", ylabel="%")
    right.axhline(95, color="grey", linestyle=":", linewidth=1)
    fig.suptitle(f"CNN on sklearn digits with adcore-kernels ({history['seconds']:.1f} s)")
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
