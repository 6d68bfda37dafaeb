"""Side-by-side benchmark of adcore's reverse mode against PyTorch eager and HIPS autograd.

Run by hand (not part of the tests):  python benchmarks/bench_reverse.py

Every figure is the best of several repeats (timeit-style), because the machine is
noisy; all contenders are timed in the same run so the ratios are comparable.

1. sin-chain: 1000 x `x = sin(x) * 1.0001 + 0.1` on a scalar (3000 ops), d x_final / d x0,
   in µs per op: adcore.grad, the eager adcore_reverse.Tensor + .backward(), torch, autograd.
2. seeds: f(x1, x2) = log(x1) + x1*x2 - sin(x2), gradient at (2, 5) w.r.t. both, µs per call.
3. MLP 784-512-512-10, batch 256, tanh, mean softmax cross-entropy, float32 and float64:
   value and gradient w.r.t. all weights and biases / forward-only time (and ms), for
   adcore, a hand-written NumPy backprop (checked against adcore), torch and autograd.
4. `import adcore` wall time in a fresh interpreter, and that sympy/numba stay unloaded.

torch and autograd are optional: a missing one prints "not installed". An error in
adcore prints its traceback in place of the figure, and the script goes on.
"""

from __future__ import annotations

import subprocess
import sys
import time
from importlib import metadata

import numpy as np

import adcore
import adcore.numpy as anp

try:
    import torch
except ImportError:
    torch = None
try:
    import autograd
    import autograd.numpy as agnp
    from autograd.scipy.special import logsumexp
except ImportError:
    autograd = agnp = logsumexp = None

from timing import ERROR, MISSING, cell, guarded, mlp_data, race, ratio, row, verdict  # benchmarks/timing.py

# ----------------------------------------------------------------------------- 1. sin-chain
N_CHAIN = 1000
N_OPS = 3 * N_CHAIN


def chain(x, sin):
    for _ in range(N_CHAIN):
        x = sin(x) * 1.0001 + 0.1
    return x


def adcore_tensor_chain():
    from adcore_reverse import Tensor  # the eager API, as PyTorch's

    x0 = Tensor(0.5, requires_grad=True)
    chain(x0, np.sin).backward()
    return x0.grad


def torch_chain():
    x0 = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    chain(x0, torch.sin).backward()
    return x0.grad


def bench_sin_chain():
    print(f"\n1. sin-chain: {N_CHAIN} x (x = sin(x)*1.0001 + 0.1), d x_final/d x0   [µs per op, {N_OPS} ops]")
    g = adcore.grad(lambda x: chain(x, np.sin), backend="reverse")
    ag = autograd and autograd.grad(lambda x: chain(x, agnp.sin))
    us = race(
        {
            "adcore grad": lambda: g(0.5),
            "adcore Tensor": adcore_tensor_chain,
            "torch": torch and torch_chain,
            "autograd": ag and (lambda: ag(0.5)),
        },
        number=2,
    )
    us = {n: t * 1e6 / N_OPS if isinstance(t, float) else t for n, t in us.items()}
    earlier = {"torch": "4.0", "autograd": "25"}
    row("contender", cell("µs/op"), cell("/torch"), cell("earlier"), "   target")
    for name, v in us.items():
        target = f"   ≤ 3.0  {verdict(v, 3.0)}" if name.startswith("adcore") else ""
        row(name, cell(v), cell(ratio(v, us["torch"])), cell(earlier.get(name, "")), target)


# ----------------------------------------------------------------------------- 2. seeds
def seed_f(x1, x2, log=np.log, sin=np.sin):
    return log(x1) + x1 * x2 - sin(x2)


def torch_seed():
    x1 = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    x2 = torch.tensor(5.0, dtype=torch.float64, requires_grad=True)
    return torch.autograd.grad(seed_f(x1, x2, torch.log, torch.sin), (x1, x2))


def bench_seeds():
    print("\n2. seeds: f(x1,x2) = log(x1) + x1*x2 - sin(x2), grad at (2, 5) w.r.t. both   [µs per call]")
    g = adcore.grad(seed_f, argnums=(0, 1), backend="reverse")
    ag = autograd and autograd.grad(lambda a, b: seed_f(a, b, agnp.log, agnp.sin), argnum=(0, 1))
    contenders = {
        "adcore grad": lambda: g(2.0, 5.0),
        "torch": torch and torch_seed,
        "autograd": ag and (lambda: ag(2.0, 5.0)),
    }
    expect = (0.5 + 5.0, 2.0 - np.cos(5.0))
    for name, f in list(contenders.items()):  # a wrong gradient is worth knowing before its speed
        got = guarded(name, lambda f=f: tuple(float(v) for v in f()), f is not None)
        contenders[name] = ERROR if got is ERROR else f
        if isinstance(got, tuple) and not np.allclose(got, expect):
            print(f"  !! {name} gradient {got} != expected {expect}")
    us = {n: t * 1e6 if isinstance(t, float) else t for n, t in race(contenders, number=300).items()}
    earlier = {"torch": "32", "autograd": "93"}
    row("contender", cell("µs/call"), cell("/torch"), cell("earlier"), "   target")
    for name, v in us.items():
        target = f"   ≤ 20   {verdict(v, 20.0)}" if name.startswith("adcore") else ""
        row(name, cell(v, fmt="{:.1f}"), cell(ratio(v, us["torch"])), cell(earlier.get(name, "")), target)


# ----------------------------------------------------------------------------- 3. MLP
SIZES, BATCH = (784, 512, 512, 10), 256


def np_loss(W1, b1, W2, b2, W3, b3, X, Y):
    """Forward only, with a hand-written stable log_softmax."""
    z = np.tanh(np.tanh(X @ W1 + b1) @ W2 + b2) @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    return -np.sum(Y * (z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))) / X.shape[0]


def np_backprop(W1, b1, W2, b2, W3, b3, X, Y):
    """Forward and backward by hand: (loss, (dW1, db1, dW2, db2, dW3, db3))."""
    h1 = np.tanh(X @ W1 + b1)
    h2 = np.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    s = e.sum(axis=1, keepdims=True)
    loss = -np.sum(Y * (z - np.log(s))) / X.shape[0]
    dz = (e / s - Y) / X.shape[0]
    da2 = (dz @ W3.T) * (1 - h2 * h2)
    da1 = (da2 @ W2.T) * (1 - h1 * h1)
    return loss, (X.T @ da1, da1.sum(0), h1.T @ da2, da2.sum(0), h2.T @ dz, dz.sum(0))


def adcore_loss(W1, b1, W2, b2, W3, b3, X, Y):
    z = np.tanh(np.tanh(X @ W1 + b1) @ W2 + b2) @ W3 + b3
    return -anp.sum(Y * anp.log_softmax(z, axis=-1)) / X.shape[0]


def ag_loss(W1, b1, W2, b2, W3, b3, X, Y):
    """The autograd idiom: its own logsumexp."""
    z = agnp.tanh(agnp.tanh(X @ W1 + b1) @ W2 + b2) @ W3 + b3
    return -agnp.sum(Y * (z - logsumexp(z, axis=1, keepdims=True))) / X.shape[0]


def torch_loss(W1, b1, W2, b2, W3, b3, X, Y):
    z = torch.tanh(torch.tanh(X @ W1 + b1) @ W2 + b2) @ W3 + b3
    return -(Y * torch.log_softmax(z, dim=-1)).sum() / X.shape[0]


def torch_value_and_grad(*data):
    params = [p.detach().requires_grad_() for p in data[:6]]
    loss = torch_loss(*params, *data[6:])
    return loss.detach(), torch.autograd.grad(loss, params)


def mlp_one_dtype(dtype, vg, ag):
    """{contender: (ms, ratio to forward)} for one dtype, after checking every gradient."""
    params, X, Y = mlp_data(SIZES, BATCH, dtype)
    data = [*params, X, Y]
    tdata = [torch.from_numpy(a) for a in data] if torch else None
    tol = dict(rtol=1e-3, atol=1e-5) if dtype == np.float32 else dict(rtol=1e-7, atol=1e-10)
    ref_loss, ref = np_backprop(*data)
    contenders = {
        "numpy forward": lambda: np_loss(*data),
        "numpy backprop": lambda: np_backprop(*data),
        "adcore v&g": lambda: vg(*data),
        "torch forward": torch and (lambda: torch_loss(*tdata)),
        "torch v&g": torch and (lambda: torch_value_and_grad(*tdata)),
        "autograd v&g": ag and (lambda: ag(*data)),
    }
    for name in ("adcore v&g", "torch v&g", "autograd v&g"):  # hand backprop vs adcore (+ the anchors)
        got = guarded(f"{name} {dtype.__name__}", contenders[name] or (lambda: None))
        contenders[name] = ERROR if got is ERROR else contenders[name]
        if isinstance(got, tuple):
            same = np.allclose(float(got[0]), ref_loss, **tol)
            same = same and all(np.allclose(np.asarray(g), r, **tol) for g, r in zip(got[1], ref))
            print(f"  check {dtype.__name__}: hand backprop == {name.split()[0]} gradients: {same}")
    ms = {n: t * 1e3 if isinstance(t, float) else t for n, t in race(contenders, number=4).items()}
    base = {"torch forward": "torch forward", "torch v&g": "torch forward"}
    return {k: (v, ratio(v, ms[base.get(k, "numpy forward")])) for k, v in ms.items()}


def bench_mlp():
    print(f"\n3. MLP {'-'.join(map(str, SIZES))}, batch {BATCH}, tanh, mean softmax cross-entropy")
    print("   value + grad w.r.t. all 6 weights/biases, as a ratio to forward-only time (×fwd)")
    vg = adcore.value_and_grad(adcore_loss, argnums=tuple(range(6)), backend="reverse")
    ag = autograd and autograd.value_and_grad(ag_loss, argnum=tuple(range(6)))
    rows = {dtype: mlp_one_dtype(dtype, vg, ag) for dtype in (np.float32, np.float64)}
    earlier = {"numpy backprop": "2.37", "torch v&g": "2.91", "autograd v&g": "3.04"}
    heads = ("f32 ms", "f32 ×fwd", "f64 ms", "f64 ×fwd", "earlier")
    row("contender", *map(cell, heads), "   target")
    for name in rows[np.float32]:
        (m32, r32), (m64, r64) = rows[np.float32][name], rows[np.float64][name]
        target = f"   ≤ 2.5  f32 {verdict(r32, 2.5)}  f64 {verdict(r64, 2.5)}" if "adcore" in name else ""
        row(name, cell(m32), cell(r32), cell(m64), cell(r64), cell(earlier.get(name, "")), target)
    print("  (×fwd: torch rows ÷ torch forward; every other row ÷ numpy forward)")


# ----------------------------------------------------------------------------- 4. import
def bench_import():
    print("\n4. `import adcore` in a fresh interpreter   [ms, best of 9, minus `python -c pass`]")

    def wall(code):
        runs = []
        for _ in range(9):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            runs.append(time.perf_counter() - t0)
        return min(runs) * 1e3

    empty = wall("pass")
    row(
        "import adcore",
        cell(wall("import adcore") - empty, fmt="{:.1f}"),
        f"   (python -c pass: {empty:.1f})",
    )
    row("import + backends()", cell(wall("import adcore; adcore.backends()") - empty, fmt="{:.1f}"))
    probe = "import sys, adcore{}; print(*sorted(m for m in ('sympy', 'numba') if m in sys.modules))"
    for label, extra in ((", import", ""), (", plugins", "; adcore.backends()")):
        run = subprocess.run([sys.executable, "-c", probe.format(extra)], capture_output=True, text=True)
        found = run.stdout.strip() if run.returncode == 0 else f"ERROR: {run.stderr.strip()}"
        row(f"sympy/numba{label}", cell(found or "none"), f"   must be none  {'MISS' if found else 'OK'}")


if __name__ == "__main__":
    versions = f"numpy {np.__version__}, torch {torch.__version__ if torch else MISSING}"
    versions += f", autograd {metadata.version('autograd') if autograd else MISSING}"
    print(f"adcore reverse-mode benchmark (python {sys.version.split()[0]}, {versions})")
    print(f"backends: {', '.join(adcore.backends())}")
    for section in (bench_sin_chain, bench_seeds, bench_mlp, bench_import):
        guarded(section.__name__, section)
