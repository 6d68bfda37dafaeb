"""adcore's conformance suite over this plugin's ops and case, through adcore's pytest plugin.

One test per (subject, backend, dtype), ids like `erfcx-reverse-float64`: each backend's
derivatives against the engine's reference (docs/conformance.md). Without this module the
same items come from `pytest --adcore-conformance=special`.
"""

from __future__ import annotations

import pytest

import adcore
from adcore.conformance import abilities
from adcore.conformance.pytest_plugin import assert_conforms, conformance_params

TARGETS = conformance_params("special")


@pytest.mark.parametrize("target", TARGETS)
def test_conformance(target):
    assert_conforms(target)


def test_the_suite_covers_every_op_and_the_case_on_every_backend():
    subjects = {p.values[0].unit.name for p in TARGETS}
    assert subjects == {"erfcx", "loggamma", "psi", "powm1", "special_chain"}
    # every backend's column (one per variant of a backend with variants) and the vmap column, in
    # float64 and float32
    assert len(TARGETS) == len(subjects) * (len(abilities.columns(adcore.backends())) + 1) * 2
