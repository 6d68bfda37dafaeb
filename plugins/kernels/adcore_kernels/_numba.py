"""numba's threading layer for every parallel kernel of the plugin: import this before any compile.

numba's default threading layer here is GNU OpenMP, after which a forked child that runs
a parallel kernel is killed ("fork() called from a process already using GNU OpenMP"):
`adcore conformance --jobs` and multiprocessing pools fork. The built-in workqueue layer
survives fork. A user who chose a layer (NUMBA_THREADING_LAYER) keeps theirs.
"""

from __future__ import annotations

import os

import numba

if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"
