"""The scipy.linalg ops: what each computes and where the conformance checks draw its inputs."""

from __future__ import annotations

from adcore.spec import Case, OpSpec

OPS: tuple[OpSpec, ...] = ()
CASES: tuple[Case, ...] = ()
