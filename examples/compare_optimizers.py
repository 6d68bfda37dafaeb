"""The nine optimizers of adcore-kernels on the Rosenbrock function, from the standard start.

    python examples/compare_optimizers.py [--steps 2000] [--out compare_optimizers.png]

f(x, y) = (1 − x)² + 100(y − x²)², minimum 0 at (1, 1), started at (−1.2, 1): a long,
curved, flat-bottomed valley, where plain gradient descent crawls and momentum and the
adaptive methods differ visibly. Gradients come from `adcore.value_and_grad` (the reverse
backend), each optimizer from `adcore.optimizer(name, [w], lr=...)`, with the learning rate
in LEARNING_RATES (chosen by hand for this problem; every other hyperparameter is the
optimizer's default). Writes one PNG, to --out (default: compare_optimizers.png in the
current directory): the loss of each optimizer per step (log scale), and their paths over
the function's contours. Needs adcore-kernels and matplotlib (its `examples` extra).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no window
import matplotlib.pyplot as plt
import numpy as np

import adcore

START = (-1.2, 1.0)
LEARNING_RATES = {
    "sgd": 1e-3,
    "momentum": 1e-3,
    "nesterov": 1e-3,
    "rprop": 1e-3,  # the initial per-element step size
    "rmsprop": 1e-2,
    "adagrad": 0.5,
    "adadelta": 1.0,
    "adam": 3e-2,
    "adamax": 0.1,
}


def rosenbrock(w):
    return (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2


def descend(name: str, steps: int) -> tuple[list[float], np.ndarray]:
    """(the loss at each point of the path, the path as a (steps + 1, 2) array) of one optimizer."""
    w = np.array(START)
    opt = adcore.optimizer(name, [w], lr=LEARNING_RATES[name])
    value_and_grad = adcore.value_and_grad(rosenbrock)
    losses, path = [], [w.copy()]
    for _ in range(steps):
        loss, grad = value_and_grad(w)
        losses.append(float(loss))
        opt.step([grad])  # updates w in place
        path.append(w.copy())
    losses.append(float(rosenbrock(w)))
    return losses, np.array(path)


def plot(runs: dict[str, tuple[list[float], np.ndarray]], out: Path) -> None:
    fig, (curves, paths) = plt.subplots(1, 2, figsize=(13, 5.5))
    x, y = np.meshgrid(np.linspace(-2, 2, 300), np.linspace(-1, 3, 300))
    paths.contour(x, y, np.log10(rosenbrock((x, y)) + 1e-3), levels=25, cmap="Greys", linewidths=0.6)
    paths.plot(*START, "ko")
    paths.plot(1, 1, "k*", markersize=12)
    for name, (losses, path) in runs.items():
        label = f"{name} (lr={LEARNING_RATES[name]:g})"
        curves.semilogy(np.maximum(losses, 1e-16), label=label)
        paths.plot(path[:, 0], path[:, 1], label=label, linewidth=1.2)
    curves.set(xlabel="step", ylabel="f(w)", title="Rosenbrock loss from (−1.2, 1)")
    curves.legend(fontsize=8)
    paths.set(xlim=(-2, 2), ylim=(-1, 3), xlabel="x", ylabel="y", title="paths (★ the minimum)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    """Run the nine optimizers, write the PNG; returns each one's losses (for the test)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("compare_optimizers.png"))
    args = parser.parse_args(argv)
    runs = {name: descend(name, args.steps) for name in LEARNING_RATES}
    plot(runs, args.out)
    width = max(map(len, runs))
    for name, (losses, _) in runs.items():
        print(f"{name:<{width}}  f: {losses[0]:.3g} -> {losses[-1]:.3g} after {args.steps} steps")
    print(f"wrote {args.out}")
    return {name: losses for name, (losses, _) in runs.items()}


if __name__ == "__main__":
    main()
