"""How wide a warm `adcore.grad(f)(x)` on plain arrays is: the first-party files whose functions run
from start to finish (issue 33's target is 8, autograd's is 7; the bound below is what the
plain-array fast path reaches today, so a change that widens the path fails here)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import adcore

ADCORE = Path(adcore.__file__).resolve().parent
PLUGINS = ADCORE.parent / "plugins"
BOUND = (
    17  # measured: api, derivatives, core, array_tracer, numpy_dispatch, plugins, spec, ops/reductions, ...
)


def files_run(call) -> set[str]:
    """The first-party files (adcore/, plugins/) with a function that runs during call()."""
    seen: set[str] = set()

    def profile(frame, event, arg):
        if event == "call":
            seen.add(frame.f_code.co_filename)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    roots = (str(ADCORE) + "/", str(PLUGINS) + "/")
    return {str(Path(f).resolve().relative_to(ADCORE.parent)) for f in seen if f.startswith(roots)}


@pytest.fixture
def warm_grad():
    g = adcore.grad(lambda x: np.sum(np.sin(x) * x))
    x = np.ones(3)
    assert np.allclose(g(x), np.cos(x) * x + np.sin(x))  # warm: plugins loaded, f's flat function cached
    return lambda: g(x)


def test_the_warm_grad_call_path_is_narrow(warm_grad):
    files = files_run(warm_grad)
    assert "adcore/api.py" in files and "adcore/derivatives.py" in files  # the scan sees the path
    assert len(files) <= BOUND, sorted(files)


def test_plain_arrays_skip_the_pytree_and_complex_machinery(warm_grad):
    files = files_run(warm_grad)
    assert not files & {"adcore/tree.py", "adcore/complex_split.py"}, sorted(files)


def test_a_pytree_argument_goes_through_the_boundary():
    g = adcore.grad(lambda d: np.sum(np.sin(d["x"]) * d["x"]))
    x = {"x": np.ones(3)}
    g(x)
    files = files_run(lambda: g(x))
    assert "adcore/tree.py" in files  # the scan would see the boundary were the fast path not taken


def test_the_per_call_op_lookup_reads_the_registry_loaded_now(clean_plugins):
    # numpy_dispatch finds np.sin's op by one dict get in ops.loaded_registry, which adcore.plugins
    # hands down each time the registry changes: a reset (a plugin blocked, a backend registered)
    # leaves nothing stale there
    from adcore import ops, plugins

    first = plugins.loaded_registry()
    assert ops.loaded_registry is first
    plugins.reset()
    assert ops.loaded_registry is None
    g = adcore.grad(lambda x: np.sum(np.sin(x)))
    assert np.allclose(g(np.ones(2)), np.cos(np.ones(2)))
    assert ops.loaded_registry is plugins.loaded_registry()
    assert ops.loaded_registry is not first
