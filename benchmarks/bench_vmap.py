"""adcore.vmap against torch.func and JAX: per-example gradients and Jacobians from batched sweeps.

Run by hand (not part of the tests):  python benchmarks/bench_vmap.py [mlp jacobian ht]   (about a minute)

1. Per-example gradients of an MLP 784-128-10 (tanh, softmax cross-entropy of a one-hot label),
   batch 64, float32 and float64, ms per batch: `adcore.vmap(adcore.grad(loss), in_axes=(None, 0, 0))`
   against a Python loop of `adcore.grad(loss)` (target: vmap >= 5x faster) and
   `torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))` (target: <= 1.0x), and jax's
   vmap(grad) without jit. Every tool's gradients are checked against the loop's first.
2. The Jacobian of f(x) = tanh(W @ x) + x**2, n = 200, float64, ms: `adcore.jacobian(f,
   backend="reverse")` against `torch.func.jacrev` (target <= 1.0x), `adcore.jacobian(f,
   backend="forward")` beside `torch.func.jacfwd` (target: forward no slower than before: compare
   revisions with compare_revisions.py), and jax.jacrev / jax.jacfwd without jit. Checked against
   the analytic diag(1 - tanh²(W x)) W + diag(2x).
3. GradBench's ht Jacobian (complicated variant, hand1: 100 points, 300 residuals x 28 columns),
   as `benchmarks/gradbench/adcore_tool/ht.py` computes it, on adcore-reverse and adcore-forward,
   in process (the same rows, without the eval's I/O). Target: reverse within 2x of forward.

torch and jax are optional: a missing one prints "not installed". All use one BLAS thread (set
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before running to change it). Every figure is timing.race's
(interleaved blocks of timeit runs; the median, or the best for the slow ht rows).
"""

from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

from timing import one_blas_thread  # noqa: E402  (before NumPy loads)

one_blas_thread()

import numpy as np  # noqa: E402

import adcore  # noqa: E402
import adcore.numpy as anp  # noqa: E402

try:
    import torch
    import torch.func

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
except ImportError:
    torch = None
try:
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
except ImportError:
    jax = jnp = None

from timing import (  # noqa: E402
    ERROR,
    MISSING,
    cell,
    checked,
    guarded,
    mlp_data,
    ms_of,
    race,
    ratio,
    row,
    verdict,
    warm_heap,
)

HERE = Path(__file__).resolve().parent
RUNS = dict(repeat=5, passes=3, summary=statistics.median)


# ----------------------------------------------------------------------------- 1. per-example grads
SIZES, BATCH = (784, 128, 10), 64


def adcore_loss(params, x, y):
    W1, b1, W2, b2 = params
    z = np.tanh(x @ W1 + b1) @ W2 + b2
    return -anp.sum(y * anp.log_softmax(z, axis=-1))


def torch_loss(params, x, y):
    W1, b1, W2, b2 = params
    z = torch.tanh(x @ W1 + b1) @ W2 + b2
    return -(y * torch.log_softmax(z, dim=-1)).sum()


def jax_loss(params, x, y):
    W1, b1, W2, b2 = params
    z = jnp.tanh(x @ W1 + b1) @ W2 + b2
    return -jnp.sum(y * jax.nn.log_softmax(z, axis=-1))


def per_example(dtype):
    """{contender: ms per batch of per-example gradients} for one dtype, each checked against the loop."""
    params, X, Y = mlp_data(SIZES, BATCH, dtype)
    params = tuple(params)
    grad = adcore.grad(adcore_loss)
    batched = adcore.vmap(grad, in_axes=(None, 0, 0))

    def loop():
        grads = [grad(params, X[i], Y[i]) for i in range(BATCH)]
        return [np.stack(g) for g in zip(*grads)]

    contenders = {"adcore vmap": lambda: batched(params, X, Y), "adcore loop": loop, "torch.func": None}
    if torch:
        tp, tX, tY = tuple(torch.from_numpy(p) for p in params), torch.from_numpy(X), torch.from_numpy(Y)
        tg = torch.func.vmap(torch.func.grad(torch_loss), in_dims=(None, 0, 0))
        contenders["torch.func"] = lambda: tg(tp, tX, tY)
    contenders["jax"] = None
    if jax:
        jp, jX, jY = tuple(jnp.asarray(p) for p in params), jnp.asarray(X), jnp.asarray(Y)
        jg = jax.vmap(jax.grad(jax_loss), in_axes=(None, 0, 0))
        contenders["jax"] = lambda: jax.block_until_ready(jg(jp, jX, jY))
    checked(contenders, loop(), 1e-4 if dtype == np.float32 else 1e-10)
    return ms_of(race(contenders, number=2, **RUNS))


def bench_per_example():
    print(
        f"\n1. per-example gradients, MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, tanh, softmax cross-entropy"
    )
    print("   [ms per batch, median of runs]   targets: loop/vmap >= 5, vmap/torch.func <= 1.0")
    heads = ("adcore vmap", "adcore loop", "torch.func", "jax", "loop/vmap", "vmap/torch", "vmap/jax")
    row("dtype", *(cell(h) for h in heads))
    for dtype in (np.float32, np.float64):
        ms = per_example(dtype)
        me = ms["adcore vmap"]
        speedup, vs_torch = ratio(ms["adcore loop"], me), ratio(me, ms["torch.func"])
        row(
            dtype.__name__,
            *(cell(ms[n]) for n in heads[:4]),
            cell(f"{speedup:.2f} {'OK' if speedup >= 5 else 'MISS'}" if isinstance(speedup, float) else "-"),
            cell(f"{vs_torch:.2f} {verdict(vs_torch, 1.0)}" if isinstance(vs_torch, float) else "-"),
            cell(ratio(me, ms["jax"])),
        )


# ----------------------------------------------------------------------------- 2. Jacobian n = 200
N_JAC = 200


def bench_jacobian():
    print(f"\n2. Jacobian of f(x) = tanh(W @ x) + x**2, n = {N_JAC}, float64   [ms per call, median of runs]")
    rng = np.random.default_rng(0)
    W, x = rng.standard_normal((N_JAC, N_JAC)) / np.sqrt(N_JAC), rng.standard_normal(N_JAC)
    reference = [np.diag(1 - np.tanh(W @ x) ** 2) @ W + np.diag(2 * x)]
    rev = adcore.jacobian(lambda x: anp.tanh(W @ x) + x**2, backend="reverse")
    fwd = adcore.jacobian(lambda x: anp.tanh(W @ x) + x**2, backend="forward")
    contenders = {"adcore reverse": lambda: rev(x), "adcore forward": lambda: fwd(x)}
    for name in ("torch.func.jacrev", "torch.func.jacfwd", "jax.jacrev", "jax.jacfwd"):
        contenders[name] = None
    if torch:
        Wt, xt = torch.from_numpy(W), torch.from_numpy(x)
        jr = torch.func.jacrev(lambda x: torch.tanh(Wt @ x) + x**2)
        jf = torch.func.jacfwd(lambda x: torch.tanh(Wt @ x) + x**2)
        contenders["torch.func.jacrev"], contenders["torch.func.jacfwd"] = (lambda: jr(xt)), (lambda: jf(xt))
    if jax:
        Wj, xj = jnp.asarray(W), jnp.asarray(x)
        jr_, jf_ = (j(lambda x: jnp.tanh(Wj @ x) + x**2) for j in (jax.jacrev, jax.jacfwd))
        contenders["jax.jacrev"] = lambda: jr_(xj).block_until_ready()
        contenders["jax.jacfwd"] = lambda: jf_(xj).block_until_ready()
    checked(contenders, reference, 1e-10)
    ms = ms_of(race(contenders, number=10, **RUNS))
    anchor = {"adcore reverse": "torch.func.jacrev", "adcore forward": "torch.func.jacfwd"}
    row("contender", cell("ms"), cell("÷torch same"), "   target")
    for name, v in ms.items():
        target = ""
        if name == "adcore reverse":
            r = ratio(v, ms[anchor[name]])
            target = f"   ≤ 1.0x torch.func.jacrev: {r:.2f} {verdict(r, 1.0)}" if isinstance(r, float) else ""
        elif name == "adcore forward":
            target = "   no slower than before (compare_revisions.py)"
        row(name, cell(v, fmt="{:.3f}"), cell(ratio(v, ms.get(anchor.get(name), "-"))), target)


# ----------------------------------------------------------------------------- 3. GradBench ht
def ht_input(index=1):
    """GradBench's ht input for hand`index` (complicated, big model) as its eval sends it."""
    upstream = HERE / "gradbench" / "upstream"
    sys.path[:0] = [str(upstream / "python" / "gradbench"), str(HERE / "gradbench")]
    from gradbench.evals.ht import io  # noqa: PLC0415 (GradBench's package, on the path just above)

    data_dir = upstream / "evals" / "ht" / "data" / "complicated_big"
    fn = next(data_dir.glob(f"hand{index}_*.txt"))
    return fn.stem, io.read_hand_instance(data_dir / "model", fn, True).to_dict()


def bench_ht():
    name, raw = guarded("ht input", ht_input)
    if raw is ERROR:
        return
    from adcore_tool import ht  # noqa: PLC0415 (benchmarks/gradbench, put on the path by ht_input)

    hands = {b: ht.prepare(raw, b) for b in ("reverse", "forward")}
    contenders = {f"adcore {b}": (lambda h=h: ht.jacobian(h)) for b, h in hands.items()}
    reference = ht.jacobian(hands["forward"])
    print(f"\n3. GradBench ht Jacobian, {name}: {reference.shape[0]} rows x {reference.shape[1]} columns")
    print("   [ms per call, best of runs]   target: reverse ≤ 2x forward")
    checked(contenders, [reference], 1e-10)
    ms = ms_of(race(contenders, number=1, repeat=3, passes=2))
    r = ratio(ms["adcore reverse"], ms["adcore forward"])
    row("contender", cell("ms"), cell("÷forward"))
    for name, v in ms.items():
        target = f"   ≤ 2.0x forward: {verdict(r, 2.0)}" if name == "adcore reverse" else ""
        row(name, cell(v), cell(ratio(v, ms["adcore forward"])), target)


def main():
    warm_heap()  # a long-running process's heap (see bench_forward.py): large temporaries reused
    torch_v = f"torch {torch.__version__}" if torch else f"torch {MISSING}"
    jax_v = f"jax {jax.__version__}" if jax else f"jax {MISSING}"
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(
        f"adcore vmap benchmark; numpy {np.__version__}, {torch_v}, {jax_v} (no jit); {threads} BLAS thread(s)"
    )
    sections = {"mlp": bench_per_example, "jacobian": bench_jacobian, "ht": bench_ht}
    for name in sys.argv[1:] or sections:
        sections[name]()


if __name__ == "__main__":
    main()
