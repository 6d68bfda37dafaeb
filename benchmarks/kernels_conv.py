"""conv2d section of the kernels benchmark: adcore-kernels' four algorithms and `auto` against torch.

Run by hand (not part of the tests):  python benchmarks/kernels_conv.py
(or as a section of `python benchmarks/bench_kernels.py conv`).

1. forward, float32, N=8, C=64, 32x32, 64 filters 3x3, padding 1: each algorithm and
   `auto` against torch.nn.functional.conv2d (2 threads), a plain NumPy im2col (the
   anchor) and the naive numba loop (`direct`). Target: auto <= 2x torch.
2. forward + both gradients (input and weight) on the same shapes against torch's
   forward + autograd backward. Target: auto <= 1.5x torch.
3. a 15x15 kernel on 64x64 (N=2, C=O=8, padding 7): every algorithm, FFT wins.
4. the crossovers `auto`'s rule rests on: winograd against im2col as the channels grow,
   fft against im2col as the kernel grows.
5. compile times: the first and second call of each algorithm in a fresh process with an
   empty numba cache, then the first call in a second process that loads the cache.

Every figure is the best of several timeit-style repeats taken in interleaved blocks
(`timing.race`); every result is first checked against the NumPy reference (a wrong
one reports ERROR and is not timed). torch is optional: without it its column says
"not installed".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
try:
    import adcore_kernels  # noqa: F401  (installed: pip install -e plugins/kernels)
except ImportError:  # run from a clone without installing the plugin
    sys.path.insert(0, str(HERE.parent / "plugins" / "kernels"))
try:
    import torch
except ImportError:
    torch = None

from adcore_kernels import conv, reference  # noqa: E402  (after the sys.path fallback above)
from timing import ERROR, cell, guarded, race, ratio, verdict, warm_heap  # noqa: E402  (benchmarks/timing.py)

# the contenders in race order: the one timed right after torch is slowed by torch's threads, so that is direct
RACE_ORDER = ("direct", "auto", "im2col", "fft", "winograd")


# ----------------------------------------------------------------------------- the anchors
def numpy_im2col(x, w, padding):
    """Stride-1 forward the plain NumPy way: sliding_window_view unfolded into one matmul."""
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    o, c, kh, kw = w.shape
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))  # (N, C, H', W', kh, kw)
    n, _, h, wd = windows.shape[:4]
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * kh * kw)
    return (cols @ w.reshape(o, -1).T).reshape(n, h, wd, o).transpose(0, 3, 1, 2)


def numpy_im2col_backward(x, w, g, padding):
    """Both gradients the plain NumPy way: weight = g^T @ cols, input = col2im of g @ w by slice adds."""
    n, c, height, width = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    windows = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    h, wd = windows.shape[2:4]
    cols = windows.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * kh * kw)
    g2 = g.transpose(0, 2, 3, 1).reshape(n * h * wd, o)
    gw = (g2.T @ cols).reshape(w.shape)
    dcols = (g2 @ w.reshape(o, -1)).reshape(n, h, wd, c, kh, kw)
    gxp = np.zeros_like(xp)
    for i in range(kh):
        for j in range(kw):
            gxp[:, :, i : i + h, j : j + wd] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return gxp[:, :, padding : padding + height, padding : padding + width], gw


def torch_forward(tx, tw, padding):
    return torch.nn.functional.conv2d(tx, tw, padding=padding)


def torch_forward_backward(tx, tw, tg, padding):
    x, w = tx.detach().requires_grad_(), tw.detach().requires_grad_()
    y = torch.nn.functional.conv2d(x, w, padding=padding)
    return (y.detach(), *torch.autograd.grad(y, (x, w), tg))


def adcore_forward_backward(x, w, g, padding, algorithm):
    y = conv.conv2d(x, w, 1, padding, 1, algorithm)
    gx = conv.conv2d_input_grad(g, w, x.shape[2:], 1, padding, 1, algorithm)
    gw = conv.conv2d_weight_grad(x, g, w.shape[2:], 1, padding, 1, algorithm)
    return y, gx, gw


# ----------------------------------------------------------------------------- helpers
def data(n, c, size, o, k, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, size, size), dtype=np.float32)
    w = rng.standard_normal((o, c, k, k), dtype=np.float32) / np.float32(np.sqrt(c * k * k))
    g = rng.standard_normal((n, o, size, size), dtype=np.float32)  # padding (k-1)/2 keeps the size
    return x, w, g


def checked(contenders, expected, tolerance=1e-4):
    """The contenders, each whose result is off the expected arrays (relative max error) replaced by ERROR."""
    out = {}
    for name, f in contenders.items():
        got = guarded(name, f, f is not None)
        if isinstance(got, str):  # MISSING or ERROR
            out[name] = None if f is None else ERROR
            continue
        got = got if isinstance(got, tuple) else (got,)
        errors = [np.abs(np.asarray(a) - b).max() / np.abs(b).max() for a, b in zip(got, expected)]
        if max(errors) > tolerance:
            print(f"  !! {name}: relative error {max(errors):.1e} against the NumPy reference")
            out[name] = ERROR
        else:
            out[name] = f
    return out


def ms(times):
    return {n: t * 1e3 if isinstance(t, float) else t for n, t in times.items()}


def line(kind, name, value, anchor_name, anchor, target=None):
    """`conv fwd   auto      2.31 ms   torch 1.50 ms   ratio 1.54  target ≤ 2.0  OK`."""
    r = ratio(value, anchor)
    text = f"  conv {kind:<5} {name:<10}{cell(value, 8)} ms   {anchor_name} {cell(anchor, 6)} ms   ratio {cell(r, 5)}"
    if target is not None:
        text += f"  target ≤ {target}  {verdict(r, target)}"
    print(text)


def print_table(kind, times, anchor_name, target=None, target_for=("auto",)):
    for name in ("auto", *conv.ALGORITHMS, "numpy im2col"):
        if name in times:
            line(
                kind,
                name,
                times[name],
                anchor_name,
                times[anchor_name],
                target if name in target_for else None,
            )


# ----------------------------------------------------------------------------- 1 and 2: the 3x3 case
def bench_3x3():
    n, c, size, o, k, padding = 8, 64, 32, 64, 3, 1
    x, w, g = data(n, c, size, o, k)
    print(
        f"\n1. forward, float32, N={n}, C={c}, {size}x{size}, {o} filters {k}x{k}, padding {padding}   [ms]"
    )
    print(f"   auto picks {conv.choose_algorithm(x.shape, w.shape, 1, padding, 1)}")
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g)) if torch else (None, None, None)
    expected = (reference.conv2d(x.astype(np.float64), w.astype(np.float64), 1, padding, 1),)
    contenders = {name: (lambda a=name: conv.conv2d(x, w, 1, padding, 1, a)) for name in RACE_ORDER}
    contenders["numpy im2col"] = lambda: numpy_im2col(x, w, padding)
    contenders["torch"] = torch and (lambda: torch_forward(tx, tw, padding).numpy())
    times = ms(race(checked(contenders, expected), number=5, repeat=3))
    print_table("fwd", times, "torch", 2.0)

    print(f"\n2. forward + input and weight gradients, same shapes, cotangent g {g.shape}   [ms]")
    expected = (
        expected[0],
        reference.conv2d_input_grad(g.astype(np.float64), w.astype(np.float64), (size, size), 1, padding, 1),
        reference.conv2d_weight_grad(x.astype(np.float64), g.astype(np.float64), (k, k), 1, padding, 1),
    )
    contenders = {name: (lambda a=name: adcore_forward_backward(x, w, g, padding, a)) for name in RACE_ORDER}
    contenders["numpy im2col"] = lambda: (
        numpy_im2col(x, w, padding),
        *numpy_im2col_backward(x, w, g, padding),
    )
    contenders["torch"] = torch and (
        lambda: tuple(t.numpy() for t in torch_forward_backward(tx, tw, tg, padding))
    )
    times = ms(race(checked(contenders, expected), number=3, repeat=3))
    print_table("f+b", times, "torch", 1.5)


# ----------------------------------------------------------------------------- 3: a large kernel
def bench_large_kernel():
    n, c, size, o, k, padding = 2, 8, 64, 8, 15, 7
    x, w, g = data(n, c, size, o, k)
    print(
        f"\n3. large kernel, float32, N={n}, C={c}, {size}x{size}, {o} filters {k}x{k}, padding {padding}   [ms]"
    )
    print(f"   auto picks {conv.choose_algorithm(x.shape, w.shape, 1, padding, 1)}")
    tx, tw, tg = (torch.from_numpy(a) for a in (x, w, g)) if torch else (None, None, None)
    expected = (reference.conv2d(x.astype(np.float64), w.astype(np.float64), 1, padding, 1),)
    contenders = {
        name: (lambda a=name: conv.conv2d(x, w, 1, padding, 1, a))
        for name in RACE_ORDER
        if name != "winograd"
    }
    contenders["numpy im2col"] = lambda: numpy_im2col(x, w, padding)
    contenders["torch"] = torch and (lambda: torch_forward(tx, tw, padding).numpy())
    times = ms(race(checked(contenders, expected), number=3, repeat=3))
    print_table("fwd", times, "torch")
    contenders = {
        name: (lambda a=name: adcore_forward_backward(x, w, g, padding, a))
        for name in RACE_ORDER
        if name != "winograd"
    }
    contenders["torch"] = torch and (lambda: torch_forward_backward(tx, tw, tg, padding))
    times = ms(race(contenders, number=2, repeat=3))
    print_table("f+b", times, "torch")


# ----------------------------------------------------------------------------- 4: crossovers
def race_forward_backward(x, w, g, padding, algorithms):
    """{algorithm: ms} of forward + both gradients."""
    return ms(race({a: (lambda a=a: adcore_forward_backward(x, w, g, padding, a)) for a in algorithms}, 3, 3))


def bench_crossovers():
    print("\n4. crossovers behind auto's rule, float32 forward + both gradients   [ms]")
    print("   3x3, padding 1, N=8, 32x32, C in, O out: winograd against im2col")
    for channels, filters in ((4, 4), (64, 4), (64, 64), (32, 64), (16, 64), (8, 64), (3, 64)):
        x, w, g = data(8, channels, 32, filters, 3)
        t = race_forward_backward(x, w, g, 1, ("im2col", "winograd"))
        pick = conv.choose_algorithm(x.shape, w.shape, 1, 1, 1)
        print(
            f"   C={channels:<3} O={filters:<4} im2col {cell(t['im2col'], 7)}   winograd {cell(t['winograd'], 7)}"
            f"   auto: {pick}"
        )
    print("   k x k, padding (k-1)/2, N=2, C=O=16, 48x48: fft against im2col")
    for k in (3, 5, 7, 9, 11):
        x, w, g = data(2, 16, 48, 16, k)
        t = race_forward_backward(x, w, g, (k - 1) // 2, ("im2col", "fft"))
        pick = conv.choose_algorithm(x.shape, w.shape, 1, (k - 1) // 2, 1)
        print(f"   k={k:<4} im2col {cell(t['im2col'], 7)}   fft {cell(t['fft'], 7)}   auto: {pick}")


# ----------------------------------------------------------------------------- 5: compile times
FIRST_CALLS = """
import json, sys, time
import numpy as np
from adcore_kernels import conv
rng = np.random.default_rng(0)
times = {}
for dtype in (np.float32, np.float64):
    x = rng.standard_normal((2, 4, 10, 10)).astype(dtype)
    w = rng.standard_normal((4, 4, 3, 3)).astype(dtype)
    g = rng.standard_normal((2, 4, 10, 10)).astype(dtype)
    for algorithm in conv.ALGORITHMS:
        calls = []
        for _ in range(2):
            start = time.perf_counter()
            conv.conv2d(x, w, 1, 1, 1, algorithm)
            conv.conv2d_input_grad(g, w, (10, 10), 1, 1, 1, algorithm)
            conv.conv2d_weight_grad(x, g, (3, 3), 1, 1, 1, algorithm)
            calls.append(time.perf_counter() - start)
        times[f"{algorithm} {dtype.__name__}"] = calls
print(json.dumps(times))
"""


def first_calls(cache_dir):
    """{algorithm dtype: [first call s, second call s]} in a fresh process using numba cache `cache_dir`."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(conv.__file__).parents[1]), env.get("PYTHONPATH", "")])
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CALLS], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def bench_compile():
    print("\n5. first calls (forward + both gradients, 2x4x10x10, 3x3) in fresh processes   [s]")
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = guarded("cold process", lambda: first_calls(cache_dir))
        warm = guarded("second process", lambda: first_calls(cache_dir))
    if ERROR in (cold, warm):
        return
    print(
        f"  {'algorithm':<18}{'1st call':>10}{'2nd call':>10}{'2nd process':>13}   (empty numba cache, then cached)"
    )
    for name, (first, second) in cold.items():
        print(f"  {name:<18}{first:10.2f}{second:10.4f}{warm[name][0]:13.3f}")
    total_cold = sum(v[0] for v in cold.values())
    total_warm = sum(v[0] for v in warm.values())
    print(f"  {'all':<18}{total_cold:10.2f}{'':10}{total_warm:13.3f}")


def main():
    warm_heap()
    if torch:
        torch.set_num_threads(2)
    print(
        "\nconv2d (adcore-kernels) against torch.nn.functional.conv2d"
        + ("" if torch else ": torch not installed")
    )
    bench_3x3()
    bench_large_kernel()
    bench_crossovers()
    bench_compile()


if __name__ == "__main__":
    main()
