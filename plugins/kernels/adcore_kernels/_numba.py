"""What the plugin's numba kernels share: the threading layer, the one array type each kernel
is compiled for, and kernels compiled both serial and parallel. Import this before any compile.

numba's default threading layer here is GNU OpenMP, after which a forked child that runs
a parallel kernel is killed ("fork() called from a process already using GNU OpenMP"):
`adcore conformance --jobs` and multiprocessing pools fork. The built-in workqueue layer
survives fork. A user who chose a layer (NUMBA_THREADING_LAYER) keeps theirs.

numba compiles a kernel once per combination of its array arguments' types, and a read-only
array (a frozen sample, `np.broadcast_to`) is another type than a writeable one: a kernel
with two array inputs compiled up to four times per dtype, ~0.3-2.6 s each. The kernels
never write their inputs, so `frozen` hands them every input as a read-only view (no copy):
one compile per kernel and dtype.

A `parallel=True` kernel takes ~3x as long to compile as the same loops on one thread (winograd's
three tile transforms: ~15 s against ~5 s of CPU for both dtypes) and, on small arrays, runs
slower (waking numba's threads costs more than they save). `SerialOrParallel` compiles a prange
kernel as both, each on its first use: arrays under PARALLEL_FROM elements (the conformance
suite's samples, small layers) run, and compile, only the serial one.
"""

from __future__ import annotations

import os
import types
from collections.abc import Callable
from typing import Any

import numba
import numpy as np

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"


def frozen(a: np.ndarray, dtype: np.dtype | None = None) -> np.ndarray:
    """a as a C-contiguous read-only array of `dtype` (a's own if None): a view where a already
    is one, else a copy."""
    view = np.ascontiguousarray(a, dtype=dtype).view()
    view.flags.writeable = False
    return view


# Elements below which a kernel runs on the calling thread alone: waking numba's other threads
# costs more than they save on a small array.
PARALLEL_FROM = 1 << 15


class SerialOrParallel:
    """A kernel written with prange whose first argument is its largest array, compiled twice
    (`cache=True`): on the calling thread for a first argument under PARALLEL_FROM elements, across
    numba's threads from there on."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.serial = numba.njit(cache=True)(fn)
        twin = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        twin.__qualname__ = f"{fn.__qualname__}_parallel"  # numba names the cache file after it
        self.parallel = numba.njit(cache=True, parallel=True)(twin)
        self.__doc__ = fn.__doc__

    def __call__(self, a: np.ndarray, *args: Any) -> Any:
        return (self.parallel if a.size >= PARALLEL_FROM else self.serial)(a, *args)
