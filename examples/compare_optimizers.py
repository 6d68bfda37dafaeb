"""The optimizers of adcore-kernels on the Rosenbrock function, from the standard start.

    python examples/compare_optimizers.py [--steps 2000] [--out compare_optimizers.png]

f(x, y) = (1 − x)² + 100(y − x²)², minimum 0 at (1, 1), started at (−1.2, 1): a long,
curved, flat-bottomed valley, where plain gradient descent crawls and momentum and the
adaptive methods differ visibly. Gradients come from `adcore.value_and_grad` (the reverse
backend), each optimizer from `adcore.optimizer(name, [w], **hyper)` with a run of RUNS:
learning rates chosen by hand for this problem, momentum and Nesterov as SGD's options (as
in torch.optim), every other hyperparameter the optimizer's default. Writes one PNG, to --out (default: compare_optimizers.png in the
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
# label: (registered name, hyperparameters); momentum and Nesterov are SGD's options, as in torch
RUNS = {
    "sgd": ("sgd", {"lr": 1e-3}),
    "momentum": ("sgd", {"lr": 1e-3, "momentum": 0.9}),
    "nesterov": ("sgd", {"lr": 1e-3, "momentum": 0.9, "nesterov": True}),
    "rprop": ("rprop", {"lr": 1e-3}),  # the initial per-element step size
    "rmsprop": ("rmsprop", {"lr": 1e-2}),
    "adagrad": ("adagrad", {"lr": 0.5}),
    "adadelta": ("adadelta", {"lr": 1.0}),
    "adam": ("adam", {"lr": 3e-2}),
    "adamax": ("adamax", {"lr": 0.1}),
}


def rosenbrock(w):
    return (1 - w[0]) ** 2 + 100 * (w[1] - w[0] ** 2) ** 2


def descend(label: str, steps: int) -> tuple[list[float], np.ndarray]:
    """(the loss at each point of the path, the path as a (steps + 1, 2) array) of one run of RUNS."""
    w = np.array(START)
    name, hyper = RUNS[label]
    opt = adcore.optimizer(name, [w], **hyper)
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
        label = f"{name} (lr={RUNS[name][1]['lr']:g})"
        curves.semilogy(np.maximum(losses, 1e-16), label=label)
        paths.plot(path[:, 0], path[:, 1], label=label, linewidth=1.2)
    curves.set(xlabel="step", ylabel="f(w)", title="Rosenbrock loss from (−1.2, 1)")
    curves.legend(fontsize=8)
    paths.set(xlim=(-2, 2), ylim=(-1, 3), xlabel="x", ylabel="y", title="paths (★ the minimum)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict[str, list[float]]:
    """Run every entry of RUNS, write the PNG; returns each one's losses (for the test)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--out", type=Path, default=Path("compare_optimizers.png"))
    args = parser.parse_args(argv)
    runs = {label: descend(label, args.steps) for label in RUNS}
    plot(runs, args.out)
    width = max(map(len, runs))
    for name, (losses, _) in runs.items():
        print(f"{name:<{width}}  f: {losses[0]:.3g} -> {losses[-1]:.3g} after {args.steps} steps")
    print(f"wrote {args.out}")
    return {name: losses for name, (losses, _) in runs.items()}


if __name__ == "__main__":
    main()
