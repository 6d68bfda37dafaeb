"""adcore.conformance.tasks: the one map of a run's work, and the one BLAS thread it checks with."""

from __future__ import annotations

import os

import threadpoolctl

from adcore.conformance import engine
from adcore.conformance.tasks import map_tasks, one_blas_thread


def _blas_threads() -> int:
    return max(pool["num_threads"] for pool in threadpoolctl.threadpool_info() if pool["user_api"] == "blas")


def test_a_unit_checks_with_one_blas_thread_whatever_the_process_has():
    # expm's numeric cell in float32 differed between a run with 2 OpenBLAS threads and a Dask
    # worker's (its nanny sets OPENBLAS_NUM_THREADS=1): the numbers must not depend on it
    unit = engine.Unit("op", "expm", "float32", ("numeric", "reverse"))
    with threadpoolctl.threadpool_limits(limits=2):
        two = engine.check_unit(unit)
    with threadpoolctl.threadpool_limits(limits=1):
        one = engine.check_unit(unit)
    assert [c.worst for c in one] == [c.worst for c in two] and one == two
    assert any(c.worst is not None and c.checks > 0 for c in one)  # something was compared


def test_one_blas_thread_is_one_inside_and_the_processs_own_after():
    with threadpoolctl.threadpool_limits(limits=2):
        before, environ = _blas_threads(), dict(os.environ)
        with one_blas_thread():
            assert _blas_threads() == 1 and os.environ["OPENBLAS_NUM_THREADS"] == "1"
        assert _blas_threads() == before and dict(os.environ) == environ


def test_map_tasks_yields_every_result_here_and_in_processes():
    assert sorted(map_tasks(abs, [-3, 1, -2])) == [1, 2, 3]
    assert sorted(map_tasks(abs, [-3, 1, -2], jobs=2)) == [1, 2, 3]
