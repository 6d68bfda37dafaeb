"""Data-parallel training on a Dask cluster: per-shard gradients on the workers, one step on the client.

    python examples/data_parallel.py [--scheduler ADDRESS] [--steps 5] [--seed 0]

The batch is a Dask array split into blocks of rows (the shards; `da.from_npy_stack` or
`da.from_zarr` read each one on a worker, here `da.from_array` spreads a NumPy array); each block of
x goes with its block of labels, and `client.compute` keeps the pair on one worker for the whole run.
Each step the client sends the model to every worker (`client.scatter(..., broadcast=True)`: the
parameters of this step), `client.map` runs `shard_gradient` on the worker that holds each shard -
the gradient of the SUM of the shard's per-example losses, by parameter name - and the client adds
those up in shard order with `adcore.tree.map`, divides by the number of examples, and takes ONE
optimizer step (adcore-kernels' Adam, over the model's parameters, updated in place). The model is
an `adcore_nn.Sequential` MLP; with no --scheduler the script starts a 2-worker `LocalCluster`,
trains, and prints how far the result is from training in this process on the whole batch.

What is exact and what is rounding: the whole batch's mean loss is (sum over shards of each shard's
summed loss) / N, so its gradient is the sum of the shards' gradients divided by N, in exact
arithmetic, for any shard sizes (a mean of per-shard means would weight a small shard's examples
more). In floating point the sums are taken in another order (per shard, then across shards; one
process sums the whole batch in one matmul), so the two agree to rounding, not bit for bit: in
float64, ~1e-15 relative (tests/examples/test_data_parallel.py holds it to 1e-12 after several
steps). The optimizer step runs once, on the client, on that gradient: the same step as in one process.

It is exact only if the loss of the batch is a sum of per-example terms each depending on one
example and the parameters. BatchNorm in training mode normalises each shard by its own mean and
variance (not the whole batch's), and its running statistics would be updated on the workers'
copies and thrown away; Dropout in training mode draws its masks on the workers, from each one's
own default generator (unseeded there) or from a copy of the `generator=` you gave it (the same masks
on every worker, and yours never advances), none of them the draws one process makes. A model with
either in training mode is refused with an `InvalidValueError` naming the layer: call `.eval()` on
those layers (BatchNorm then uses its running statistics, per example: exact), use LayerNorm, or
train in one process. Your own module that mixes examples in forward is in the same position.
Forward hooks run on the workers' copies (what they record stays there). Needs dask[array] and
distributed (`pip install 'adcore-numeric[distributed]'`).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import adcore_nn as nn
import numpy as np
from adcore_kernels.optim import Adam

import adcore
from adcore.errors import InvalidValueError


def summed_loss(model: nn.Module, x, y):
    """The SUM of the per-example cross-entropies: what adds up across shards (a mean does not)."""
    return nn.CrossEntropyLoss(reduction="sum")(model(x), y)


def mean_loss(model: nn.Module, x, y):
    """The whole batch's mean cross-entropy: what one process would train on."""
    return nn.CrossEntropyLoss()(model(x), y)


def check_shardable(model: nn.Module) -> None:
    """Raise InvalidValueError if a layer's training-mode forward mixes examples or draws random numbers."""
    for name, layer in model.named_modules():
        if not layer.training:
            continue
        if isinstance(layer, nn.BatchNorm1d | nn.BatchNorm2d):
            why = "normalises each shard by the shard's own mean and variance, not the whole batch's"
        elif isinstance(layer, nn.Dropout) and layer.p > 0:
            why = "draws its masks from the workers' generators, not the draws one process makes"
        else:
            continue
        raise InvalidValueError(
            f"data-parallel training: layer {name!r} ({type(layer).__name__}) in training mode {why}, so the "
            "gradient would differ from training on the whole batch in one process; call "
            f"model.get_submodule({name!r}).eval() before training (BatchNorm then uses its running "
            "statistics), use LayerNorm, or train in one process"
        )


def shard_gradient(model: nn.Module, shard: tuple) -> tuple[float, dict[str, np.ndarray], int]:
    """On a worker: (the shard's summed loss, its gradient by parameter name, its number of examples).

    By name rather than model-shaped: a gradient unpickled on the client is a copy of another model,
    whose pytree structure the client's model (rightly) refuses to pair with; the names pair it."""
    x, y = shard
    loss, grads = adcore.value_and_grad(summed_loss)(model, x, y)
    return float(loss), dict(grads.named_parameters()), len(y)


def shards_on_workers(client, x, y) -> list:
    """One future per block of rows of the Dask arrays x and y: (x block, y block), held on a worker."""
    import dask

    if x.shape[0] != y.shape[0]:
        raise InvalidValueError(f"data-parallel training: x has {x.shape[0]} rows but y has {y.shape[0]}")
    x = x.rechunk({axis: -1 for axis in range(1, x.ndim)})  # whole examples: blocks split rows only
    y = y.rechunk({0: x.chunks[0], **{axis: -1 for axis in range(1, y.ndim)}})  # the labels of x's rows
    pairs = zip(x.to_delayed().ravel(), y.to_delayed().ravel(), strict=True)
    return client.compute([dask.delayed(tuple)(pair) for pair in pairs])


def data_parallel_gradient(client, model: nn.Module, shards: list) -> tuple[float, dict[str, np.ndarray]]:
    """(the whole batch's mean loss, its gradient by parameter name), from the shards' sums on the workers."""
    check_shardable(model)
    # this step's parameters, under a new key each step (hash=False): a task never sees a stale model
    model_on_workers = client.scatter(model, broadcast=True, hash=False)
    results = client.gather(client.map(shard_gradient, [model_on_workers] * len(shards), shards))
    count = sum(n for _, _, n in results)
    if count == 0:  # a mean over no example: nan, which Adam would write into every parameter
        raise InvalidValueError(
            "data-parallel training: the shards hold no example, so there is no mean loss"
        )
    # in shard order, whichever worker finished first: the same rounding every run
    loss = sum(loss for loss, _, _ in results) / count
    grads = adcore.tree.map(lambda *parts: sum(parts) / count, *(g for _, g, _ in results))
    return loss, grads


def train(client, model: nn.Module, x, y, steps: int, lr: float = 1e-2) -> list[float]:
    """Take `steps` Adam steps on the whole batch's mean loss, updating model in place; the losses."""
    shards = shards_on_workers(client, x, y)
    optimizer = Adam(dict(model.named_parameters()), lr=lr)  # the model's own arrays, by name
    losses = []
    for _ in range(steps):
        loss, grads = data_parallel_gradient(client, model, shards)
        optimizer.step(grads)
        losses.append(loss)
    return losses


def train_in_one_process(
    model: nn.Module, x: np.ndarray, y: np.ndarray, steps: int, lr: float = 1e-2
) -> list:
    """The same training on the whole batch in this process: what the data-parallel run must equal."""
    optimizer = Adam(model, lr=lr)
    losses = []
    for _ in range(steps):
        loss, grads = adcore.value_and_grad(mean_loss)(model, x, y)
        optimizer.step(grads)
        losses.append(float(loss))
    return losses


def make_model(seed: int) -> nn.Module:
    """A float64 MLP, 4 -> 16 -> 3, with torch's default initialisation drawn from `seed`."""
    nn.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 3)).double()


def make_data(seed: int, n: int = 300) -> tuple[np.ndarray, np.ndarray]:
    """Three Gaussian blobs in 4 dimensions: x (n, 4) float64, y (n,) int64 labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    return rng.standard_normal((n, 4)) + 2.0 * np.eye(3, 4)[y], y


def main(argv: Sequence[str] | None = None) -> dict:
    import dask.array as da
    from dask.distributed import Client

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scheduler", help="a Dask scheduler's address (default: a 2-worker LocalCluster)")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    x_np, y_np = make_data(args.seed)
    rows = (100, 80, 70, 50)  # uneven shards: their sums still make the whole batch's mean
    x, y = da.from_array(x_np, chunks=(rows, -1)), da.from_array(y_np, chunks=(rows,))
    # with no address, Client starts a LocalCluster of its own and closes it on exit
    local = {"n_workers": 2, "threads_per_worker": 1, "dashboard_address": None}
    with Client(args.scheduler) if args.scheduler else Client(**local) as client:
        model = make_model(args.seed)
        losses = train(client, model, x, y, args.steps)
    for step, loss in enumerate(losses, 1):
        print(f"step {step}  mean loss {loss:.6f}")
    alone = make_model(args.seed)
    train_in_one_process(alone, x_np, y_np, args.steps)
    difference = max(
        float(np.max(np.abs(a - b)) / np.max(np.abs(b)))
        for a, b in zip(model.parameters(), alone.parameters(), strict=True)
    )
    print(f"parameters vs one-process training: largest difference {difference:.1e} of the largest entry")
    return {"losses": losses, "model": model, "alone": alone}


if __name__ == "__main__":
    main()
