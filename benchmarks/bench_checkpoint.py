"""Peak memory and time of a gradient through 30 checkpointed blocks, against the plain run (and torch).

Run by hand (not part of the tests):  python benchmarks/bench_checkpoint.py

The network: h_{k+1} = tanh(W @ tanh(W @ h_k)), 30 blocks, W 200x200 and h 200x64 in float64,
loss = sum(h_30 ** 2); the gradient with respect to W and h_0 (adcore.grad, backend reverse).
"checkpoint" wraps each block in adcore.checkpoint (torch: torch.utils.checkpoint.checkpoint,
use_reentrant=False), so the tape keeps each block's inputs and output instead of its four
intermediates, and the backward sweep runs each block's forward once more.

Figures, all from one run of this script:
- time: the median of several runs of one gradient (timing.race, with glibc's heap kept warm:
  timing.warm_heap; one BLAS thread for NumPy and torch), in ms;
- tape: what the forward pass leaves for the backward one, in MB: for adcore what NumPy holds
  after adcore.vjp's forward pass (tracemalloc; it includes vjp's copies of W and h, 0.4 MB),
  for torch the bytes of the tensors autograd saved (torch.autograd.graph.saved_tensors_hooks);
- peak: what NumPy allocated at most during one gradient (tracemalloc), in MB; adcore only,
  since torch's allocator is not traced by tracemalloc;
- RSS peak: the growth of the process's resident high-water mark (VmHWM, reset through
  /proc/self/clear_refs) during one gradient, each contender in a fresh interpreter after a
  small warm-up, in MB: measured the same way for adcore and torch, but coarse (the C
  allocator's reuse of freed blocks decides part of it).
Every contender's gradient is first checked against the plain adcore one.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tracemalloc

from timing import one_blas_thread  # noqa: E402  (before NumPy loads)

one_blas_thread()

import numpy as np  # noqa: E402

import adcore  # noqa: E402
import adcore.numpy as anp  # noqa: E402

try:
    import torch
    import torch.utils.checkpoint as torch_checkpoint

    torch.set_num_threads(1)
except ImportError:
    torch = torch_checkpoint = None

from timing import ERROR, MISSING, cell, guarded, race, ratio, row, warm_heap  # noqa: E402  (benchmarks/timing.py)

BLOCKS, N, BATCH = 30, 200, 64


def block(W, h):
    return anp.tanh(W @ anp.tanh(W @ h))


checkpointed_block = adcore.checkpoint(block)


def loss(W, h, step=block, blocks=BLOCKS):
    for _ in range(blocks):
        h = step(W, h)
    return anp.sum(h**2)


def data(n=N, batch=BATCH):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, n)) / np.sqrt(n), rng.standard_normal((n, batch))


def torch_block(W, h):
    return torch.tanh(W @ torch.tanh(W @ h))


def torch_loss(W, h, checkpointed, blocks=BLOCKS):
    for _ in range(blocks):
        if checkpointed:
            h = torch_checkpoint.checkpoint(torch_block, W, h, use_reentrant=False)
        else:
            h = torch_block(W, h)
    return (h**2).sum()


def torch_forward(W, h):
    with torch.no_grad():
        return torch_loss(*(torch.from_numpy(a) for a in (W, h)), False)


def torch_grad(W, h, checkpointed, blocks=BLOCKS):
    W, h = (torch.from_numpy(a).requires_grad_() for a in (W, h))
    return [g.numpy() for g in torch.autograd.grad(torch_loss(W, h, checkpointed, blocks), (W, h))]


def torch_tape(W, h, checkpointed) -> float:
    """MB of the tensors torch's autograd saves for the backward pass (each storage once)."""
    saved = {}

    def pack(t):
        saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    W, h = (torch.from_numpy(a).requires_grad_() for a in (W, h))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        torch_loss(W, h, checkpointed)
    return sum(saved.values()) / 1e6


def adcore_tape(W, h, step) -> float:
    """MB NumPy holds after reverse mode's forward pass (adcore.vjp), before the sweep."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        kept = adcore.vjp(lambda W, h: loss(W, h, step), W, h)  # the value and its pullback, alive here
        return (tracemalloc.get_traced_memory()[0] - base) / 1e6 + 0 * len(kept)
    finally:
        tracemalloc.stop()


def contenders(blocks=BLOCKS):
    """{name: gradient(W, h) -> (dW, dh)}, None where the library is missing."""
    plain = adcore.grad(lambda W, h: loss(W, h, block, blocks), argnums=(0, 1))
    ckpt = adcore.grad(lambda W, h: loss(W, h, checkpointed_block, blocks), argnums=(0, 1))
    return {
        "adcore": plain,
        "adcore checkpoint": ckpt,
        "torch": torch and (lambda W, h: torch_grad(W, h, False, blocks)),
        "torch checkpoint": torch and (lambda W, h: torch_grad(W, h, True, blocks)),
    }


def tracemalloc_peak(fn, *args) -> float:
    """MB NumPy allocated at most during fn(*args), above what was allocated before."""
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        fn(*args)
        return (tracemalloc.get_traced_memory()[1] - base) / 1e6
    finally:
        tracemalloc.stop()


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":"))


def rss_peak_here(name: str) -> float:
    """MB the resident high-water mark grows by during one gradient of `name`, after a warm-up."""
    small = contenders(blocks=2)[name]
    small(*data(8, 4))  # loads the plugins (and torch's kernels) before the measurement
    fn, args = contenders()[name], data()
    gc.collect()
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # resets VmHWM to the current VmRSS (Linux 4.0+)
    base = _status_kb("VmRSS")
    fn(*args)
    return (_status_kb("VmHWM") - base) / 1e3


def rss_peak(name: str) -> float | str:
    """rss_peak_here(name) in a fresh interpreter, so no contender inherits another's heap."""
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, __file__, "--rss", name], capture_output=True, text=True, cwd=here)
    if done.returncode != 0:
        print(f"  !! RSS of {name} failed:\n    " + done.stderr.strip().replace("\n", "\n    "))
        return ERROR
    return float(done.stdout.split()[-1])


def main() -> None:
    warm_heap()  # freed memory stays in the heap, so no run pays for another's page faults (timing.py)
    W, h = data()
    fns = contenders()
    print(
        f"checkpoint: grad of sum(h_{BLOCKS}**2), h_(k+1) = tanh(W @ tanh(W @ h_k)), {BLOCKS} blocks, "
        f"W {N}x{N}, h {N}x{BATCH}, float64, w.r.t. W and h_0"
    )
    reference = fns["adcore"](W, h)
    for name, fn in fns.items():  # a wrong gradient is worth knowing before its cost
        got = guarded(name, lambda fn=fn: fn(W, h), fn is not None)
        if got in (ERROR, MISSING):
            fns[name] = got if fn is not None else None
            continue
        same = all(np.array_equal(a, b) for a, b in zip(got, reference))
        close = all(np.allclose(a, b, rtol=1e-10, atol=1e-12) for a, b in zip(got, reference))
        worst = max(float(np.max(np.abs(a - b))) for a, b in zip(got, reference))
        print(f"  {name:<22} gradient vs plain adcore: {'identical' if same else f'max |diff| {worst:.1e}'}")
        if not close:
            fns[name] = ERROR
    timed = {n: (lambda f=f: f(W, h)) if callable(f) else f for n, f in fns.items()}
    # the forward pass alone (no tape): what checkpointing adds to a gradient, once per block
    timed["adcore forward"] = lambda: loss(W, h)
    timed["torch forward"] = torch and (lambda: torch_forward(W, h))
    ms = race(timed, number=1, repeat=2, passes=5, summary=statistics.median)
    ms = {n: t * 1e3 if isinstance(t, float) else t for n, t in ms.items()}
    tape = {
        "adcore": guarded("adcore", lambda: adcore_tape(W, h, block)),
        "adcore checkpoint": guarded("adcore checkpoint", lambda: adcore_tape(W, h, checkpointed_block)),
        "torch": guarded("torch", lambda: torch_tape(W, h, False), torch is not None),
        "torch checkpoint": guarded("torch checkpoint", lambda: torch_tape(W, h, True), torch is not None),
    }
    peak = {n: "-" for n in fns}  # torch allocates outside tracemalloc's view
    peak.update({n: guarded(n, lambda f=f: tracemalloc_peak(f, W, h)) for n, f in fns.items() if n[0] == "a"})
    rss = {n: rss_peak(n) if callable(f) else f if f is not None else MISSING for n, f in fns.items()}
    print()
    heads = ("time ms", "/plain", "tape MB", "/plain", "peak MB", "/plain", "RSS peak MB", "/plain")
    row("contender", *(cell(h, 12) for h in heads))
    for name in fns:
        plain = "torch" if name.startswith("torch") else "adcore"
        row(
            name,
            *(
                each
                for figures in (ms, tape, peak, rss)
                for each in (
                    cell(figures[name], 12, "{:.1f}"),
                    cell(ratio(figures[name], figures[plain]), 12),
                )
            ),
        )
    for lib in ("adcore", "torch"):
        forward, plain = ms[f"{lib} forward"], ms[lib]
        if isinstance(forward, float) and isinstance(plain, float):
            print(
                f"  {lib} forward pass alone {forward:.1f} ms: checkpointing adds one per gradient, "
                f"so {plain + forward:.1f} ms ({(plain + forward) / plain:.2f}x) were the floor"
            )


if __name__ == "__main__":
    if sys.argv[1:2] == ["--rss"]:
        print(rss_peak_here(sys.argv[2]))
    else:
        main()
