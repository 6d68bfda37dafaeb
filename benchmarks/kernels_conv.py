"""conv2d section of the kernels benchmark: adcore-kernels' four algorithms and `auto` against torch.

Run by hand (not part of the tests):  python benchmarks/kernels_conv.py [--runs R] [--quick]
(or as a section of `python benchmarks/bench_kernels.py conv`).

1. The layer of the targets: float32, N=8, C=64, 32x32, 64 filters 3x3, padding 1. Forward
   (against torch.nn.functional.conv2d) and forward + both gradients (against torch's
   forward + autograd backward of x and w), each algorithm and `auto`. R runs (5 by
   default), all printed. A run is several rounds in which each contender is called next
   to a call of torch (interleaved call by call): its figure is the median of its calls,
   its ratio the median of its time over the paired torch call's, so a burst of load slows
   both sides of a ratio alike. The machine is shared: a run first waits (up to QUIET_WAIT
   s) for other processes to keep at most QUIET of the CPUs busy, and is printed with that
   share, marked q (quiet) or B (busy). The summary is the median over the quiet runs (over
   all of them if fewer than 3 are quiet, and it says so), with OK/MISS against the
   targets: forward <= 1.0x torch, forward + both gradients <= 1.5x torch.
2. `auto`'s crossovers: forward + both gradients (what auto's rule is for; the rule is the
   same for each function) at N=2, 32x32, padding (k-1)//2 for C, O in {3, 8, 16, 32, 64},
   k in {3, 5, 7, 11}, stride 1 and 2: every applicable algorithm, the best of 3 rounds
   of the algorithms in turn (direct once, and only where it takes at most DIRECT_BUDGET
   multiply-adds: it is never chosen), the one `auto` picks, and a mark where the pick
   takes more than 1.2x the fastest. On a loaded machine OpenBLAS's threads (im2col,
   winograd) lose far more than pocketfft's one (fft); choose_algorithm's docstring says
   how its rule was measured.
3. compile times: the first and second call of each algorithm in a fresh process with an
   empty numba cache, then the first call in a second process that loads the cache.

Every result is first checked against the NumPy reference (a wrong one reports ERROR and
is not timed). torch is optional: without it its column says "not installed".
"""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
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
from timing import ERROR, MISSING, cell, guarded, verdict, warm_heap  # noqa: E402  (benchmarks/timing.py)

TARGETS = {"fwd": 1.0, "f+b": 1.5}  # auto's time / torch's, at most
CONTENDERS = ("torch", "auto", "winograd", "im2col", "fft", "direct")  # the order of a run
DIRECT_BUDGET = 5e7  # multiply-adds of forward + both gradients past which the crossover table skips direct
SLOW_PICK = 1.2  # the crossover table marks auto's pick when it takes more than this times the best


# ----------------------------------------------------------------------------- what is timed
def adcore_forward(x, w, g, stride, padding, algorithm):
    return (conv.conv2d(x, w, stride, padding, 1, algorithm),)


def adcore_forward_backward(x, w, g, stride, padding, algorithm):
    y = conv.conv2d(x, w, stride, padding, 1, algorithm)
    gx = conv.conv2d_input_grad(g, w, x.shape[2:], stride, padding, 1, algorithm)
    gw = conv.conv2d_weight_grad(x, g, w.shape[2:], stride, padding, 1, algorithm)
    return y, gx, gw


def torch_forward(tx, tw, tg, stride, padding):
    return (torch.nn.functional.conv2d(tx, tw, stride=stride, padding=padding),)


def torch_forward_backward(tx, tw, tg, stride, padding):
    x, w = tx.detach().requires_grad_(), tw.detach().requires_grad_()
    y = torch.nn.functional.conv2d(x, w, stride=stride, padding=padding)
    return (y.detach(), *torch.autograd.grad(y, (x, w), tg))


def as_numpy(f, *args):
    return tuple(t.numpy() for t in f(*args))


def data(n, c, size, o, k, stride=1, seed=0):
    """x, w and a cotangent g of conv2d(x, w, stride, padding (k-1)//2), float32."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, size, size), dtype=np.float32)
    w = rng.standard_normal((o, c, k, k), dtype=np.float32) / np.float32(np.sqrt(c * k * k))
    out = reference.conv2d_output_size((size, size), (k, k), stride, (k - 1) // 2, 1)
    g = rng.standard_normal((n, o, *out), dtype=np.float32)
    return x, w, g


def expected_results(x, w, g, stride, padding, backward):
    """The NumPy reference's forward (and both gradients), in float64."""
    x, w, g = (a.astype(np.float64) for a in (x, w, g))
    y = reference.conv2d(x, w, stride, padding, 1)
    if not backward:
        return (y,)
    gx = reference.conv2d_input_grad(g, w, x.shape[2:], stride, padding, 1)
    return y, gx, reference.conv2d_weight_grad(x, g, w.shape[2:], stride, padding, 1)


def checked(name, f, expected, tolerance=1e-4):
    """f, or ERROR when it raises or its results are off the reference (relative max error)."""
    got = guarded(name, f)
    if got == ERROR:
        return ERROR
    errors = [np.abs(np.asarray(a) - b).max() / np.abs(b).max() for a, b in zip(got, expected)]
    if max(errors) > tolerance:
        print(f"  !! {name}: relative error {max(errors):.1e} against the NumPy reference")
        return ERROR
    return f


# ----------------------------------------------------------------------------- 1: the target layer
def contenders(x, w, g, padding, backward):
    """{name: thunk, None (torch missing) or ERROR}, each checked against the reference."""
    expected = expected_results(x, w, g, 1, padding, backward)
    ours, theirs = (
        (adcore_forward_backward, torch_forward_backward) if backward else (adcore_forward, torch_forward)
    )
    out = {}
    for name in CONTENDERS:
        if name == "torch":
            if torch is None:
                out[name] = None
                continue
            f = partial(as_numpy, theirs, *(torch.from_numpy(a) for a in (x, w, g)), 1, padding)
        else:
            f = partial(ours, x, w, g, 1, padding, name)
        out[name] = checked(name, f, expected)
    return out


QUIET = 0.25  # a run starts once other processes use at most this share of the CPUs (or after QUIET_WAIT s)
QUIET_WAIT = 20.0


def busy_share(interval=0.5):
    """The share of all CPUs busy over `interval` s (this process sleeps meanwhile: the others' use);
    None where /proc/stat is missing."""

    def sample():
        with open("/proc/stat") as f:
            ticks = [int(v) for v in f.readline().split()[1:]]
        return ticks[3] + ticks[4], sum(ticks)  # idle + iowait, all

    try:
        idle0, total0 = sample()
        time.sleep(interval)
        idle1, total1 = sample()
    except OSError:
        return None
    return 1 - (idle1 - idle0) / max(total1 - total0, 1)


def wait_for_quiet():
    """Wait (at most QUIET_WAIT s) until other processes leave the CPUs mostly idle; their busy share."""
    deadline = time.monotonic() + QUIET_WAIT
    while True:
        share = busy_share()
        if share is None or share <= QUIET or time.monotonic() > deadline:
            return share


SHUFFLE = random.Random(0)  # the contenders' order in each round of a run
SETTLE = 0.005  # s of sleep before each timed call: the last call's thread pool (torch's OpenMP, OpenBLAS) goes idle


def timed(f):
    """Seconds f() takes, after SETTLE: no contender pays for the spinning threads of the one before."""
    time.sleep(SETTLE)
    start = time.perf_counter()
    f()
    return time.perf_counter() - start


def run_once(thunks, calls):
    """One run: ({name: ms}, {name: ratio to torch}). `calls` rounds; in a round each contender, in
    a shuffled order, is called next to a call of torch (torch first in even rounds, second in
    odd ones: whichever runs right after the other's threads pays for the switch), direct in the
    first round only.
    Its ms is the median of its calls, its ratio the median of its time over the paired torch
    call's, so a burst of load from another process slows both sides of a ratio alike."""
    anchor = thunks.get("torch")
    live = {name: f for name, f in thunks.items() if callable(f) and name != "torch"}
    times, ratios = {name: [] for name in (*live, "torch")}, {name: [] for name in live}
    for round_ in range(calls):
        names = list(live)
        SHUFFLE.shuffle(names)  # no contender always comes first, or right after the same one
        for name in names:
            f = live[name]
            if name == "direct" and round_ > 0:
                continue
            if not callable(anchor):
                times[name].append(timed(f))
                continue
            if round_ % 2 == 0:
                theirs, ours = timed(anchor), timed(f)
            else:
                ours, theirs = timed(f), timed(anchor)
            times[name].append(ours)
            times["torch"].append(theirs)
            ratios[name].append(ours / theirs)
    ms = {name: statistics.median(t) * 1e3 for name, t in times.items() if t}
    figures = {name: ms.get(name, MISSING if f is None else f) for name, f in thunks.items()}
    return figures, {name: statistics.median(r) for name, r in ratios.items() if r}


def bench_layer(runs):
    n, c, size, o, k, padding = 8, 64, 32, 64, 3, 1
    x, w, g = data(n, c, size, o, k)
    print(
        f"\n1. float32, N={n}, C={c}, {size}x{size}, {o} filters {k}x{k}, padding {padding}   [ms; ratio to torch]"
    )
    print(f"   auto picks {conv.choose_algorithm(x.shape, w.shape, 1, padding, 1)}")
    for kind, backward, calls in (("fwd", False, 9), ("f+b", True, 5)):
        what = "forward" if kind == "fwd" else "forward + input and weight gradients (torch: autograd)"
        print(
            f"\n   {what}; a run: {calls} rounds of each contender next to a torch call (direct: 1 round); "
            "median ms, median of the paired ratios"
        )
        thunks = contenders(x, w, g, padding, backward)
        run_once(thunks, 1)  # warm: compiled, heap grown
        print("   run  busy " + "".join(f"{name:>16}" for name in CONTENDERS))
        per_run, busy_shares = [], []
        for r in range(runs):
            busy = wait_for_quiet()
            busy_shares.append(busy)
            figures, ratios = run_once(thunks, calls)
            per_run.append((figures, ratios))
            cells = "".join(
                cell(figures[name], 9) + (f" {ratios[name]:5.2f}x" if name in ratios else " " * 7)
                for name in CONTENDERS
            )
            quiet = "  " if busy is None else (" q" if busy <= QUIET else " B")
            print(f"   {r + 1:>3} {'?' if busy is None else f'{busy:.0%}':>4}{quiet}" + cells)
        summarize(kind, per_run, busy_shares)


def summarize(kind, per_run, busy):
    """The median over the quiet runs (all of them if fewer than 3) of each contender's ms and ratio to torch."""
    quiet = [run for run, b in zip(per_run, busy) if b is not None and b <= QUIET]
    if len(quiet) >= 3:
        print(f"   median over the {len(quiet)} quiet runs of {len(per_run)}:")
        per_run = quiet
    else:
        print(
            f"   median over all {len(per_run)} runs ({len(quiet)} quiet: the figures are a busy machine's):"
        )
    for name in CONTENDERS:
        values = [figures[name] for figures, _ in per_run]
        if not all(isinstance(v, float) for v in values):
            print(f"   conv {kind:<4} {name:<9} {values[0]}")
            continue
        text = f"   conv {kind:<4} {name:<9}{statistics.median(values):9.2f} ms"
        ratios = [r[name] for _, r in per_run if name in r]
        if ratios:
            ratio = statistics.median(ratios)
            text += f"   {ratio:5.2f}x torch"
            if name == "auto":
                text += f"   target ≤ {TARGETS[kind]}  {verdict(ratio, TARGETS[kind])}"
        print(text)


# ----------------------------------------------------------------------------- 2: auto's crossovers
def multiply_adds(n, c, o, out, k):
    return 3 * n * c * o * out[0] * out[1] * k * k  # forward and both gradients, each as many


def crossover_times(x, w, g, stride, k, rounds=3):
    """{algorithm: ms} of forward + both gradients: `rounds` rounds of one call of each applicable
    algorithm in turn (direct in the first only, and only within DIRECT_BUDGET), the best of each:
    the other processes on the machine only ever add time."""
    padding = (k - 1) // 2
    thunks = {}
    for a in conv.applicable(k, stride, 1):
        if (
            a == "direct"
            and multiply_adds(x.shape[0], x.shape[1], w.shape[0], g.shape[2:], k) > DIRECT_BUDGET
        ):
            continue
        f = partial(adcore_forward_backward, x, w, g, stride, padding, a)
        if guarded(a, f) != ERROR:  # also the warm-up call
            thunks[a] = f
    times = {a: [] for a in thunks}
    for round_ in range(rounds):
        for a, f in thunks.items():
            if a != "direct" or round_ == 0:
                times[a].append(timed(f))
    return {a: min(t) * 1e3 for a, t in times.items()}


def bench_crossovers(quick):
    n, size = 2, 32
    channels = (3, 16, 64) if quick else (3, 8, 16, 32, 64)
    print(
        f"\n2. auto's crossovers: forward + both gradients, float32, N={n}, {size}x{size}, padding (k-1)//2   [ms]"
    )
    print(
        f"   3 rounds of one call of each algorithm in turn, the best of each (direct: 1 call, only up to "
        f"{DIRECT_BUDGET:.0e} multiply-adds); * marks the fastest, ! an auto pick > {SLOW_PICK}x the fastest"
    )
    print(
        f"   {'k':>2} {'s':>2} {'C':>3} {'O':>3}" + "".join(f"{a:>10}" for a in conv.ALGORITHMS) + "   auto"
    )
    slow = total = 0
    for k in (3, 5, 7, 11):
        for stride in (1, 2):
            for c in channels:
                for o in channels:
                    x, w, g = data(n, c, size, o, k, stride, seed=k + c + o)
                    times = crossover_times(x, w, g, stride, k)
                    pick = conv.choose_algorithm(x.shape, w.shape, stride, (k - 1) // 2, 1)
                    best = min(times, key=times.get)
                    cells = "".join(
                        (f"{times[a]:9.2f}" + ("*" if a == best else " ")) if a in times else f"{'-':>9} "
                        for a in conv.ALGORITHMS
                    )
                    off = times[pick] / times[best] if pick in times else float("nan")
                    mark = f"  ! {off:.2f}x" if off > SLOW_PICK else ""
                    slow, total = slow + bool(mark), total + 1
                    print(f"   {k:>2} {stride:>2} {c:>3} {o:>3}{cells}   {pick}{mark}")
    print(f"   auto's pick within {SLOW_PICK}x the fastest at {total - slow} of {total} shapes")


# ----------------------------------------------------------------------------- 3: compile times
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
    print("\n3. first calls (forward + both gradients, 2x4x10x10, 3x3) in fresh processes   [s]")
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


def main(argv=()):
    runs = int(argv[argv.index("--runs") + 1]) if "--runs" in argv else 5
    warm_heap()
    if torch:
        torch.set_num_threads(2)
    print(
        "\nconv2d (adcore-kernels) against torch.nn.functional.conv2d"
        + (f" (torch {torch.__version__}, 2 threads)" if torch else ": torch not installed")
        + f"; {os.cpu_count()} cores"
    )
    bench_layer(max(runs, 1))
    bench_crossovers("--quick" in argv)
    bench_compile()


if __name__ == "__main__":
    main(sys.argv[1:])
