"""Fixtures the conformance tests share."""

from __future__ import annotations

import contextlib
import os

import pytest


@pytest.fixture(scope="module")
def cluster_address():
    """One 2-worker LocalCluster for the module; its workers load the installed plugins."""
    distributed = pytest.importorskip("distributed")
    with contextlib.ExitStack() as stack:
        with pytest.MonkeyPatch.context() as env:  # the workers start with no plugin switch set
            for name in [n for n in os.environ if n.startswith("ADCORE_")]:
                env.delenv(name)
            cluster = stack.enter_context(
                distributed.LocalCluster(
                    n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
                )
            )
        yield cluster.scheduler_address
