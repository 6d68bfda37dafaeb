"""The conformance engine: every op and case, on every installed backend, against one reference.

The pipeline, one module a stage (this module gathers their public names):

1. `calls`: a Call per sample of the subject (an op, a composite case, a random program);
2. `reference`: the reference Jacobian, in float64 at the sample's values: the first exact
   backend (by reference_priority) corroborated by another or by the estimating backend's
   estimate within its error; if none is, that estimate itself, with its error as tolerance;
3. `checks`: each backend's derivatives against it, one function per check (jacobians, zeros,
   dot products, second derivatives along random directions, kinks), tallied per cell;
4. `results`: the tallies, cells and report;
5. `runner`: the plan (subjects × dtypes as units), the units checked in worker processes.

What a backend can do (exact or estimating, its estimate options, its reference priority,
whether it can be the outer derivative, what it builds on) is data on its class
(adcore.backend.Backend), read by `abilities`; an op's kinks are data on its OpSpec. The
engine names no backend and no op.
"""

from __future__ import annotations

from adcore.conformance.abilities import estimate_options, estimates
from adcore.conformance.calls import Call, case_calls, describe, op_calls
from adcore.conformance.checks import SECOND_MAX_SIZE, check_subject, op_support, second_estimate
from adcore.conformance.reference import Estimate, Reference, choose_reference, reference_for
from adcore.conformance.results import Results, Tally, compare, deviation
from adcore.conformance.runner import DTYPES, Plan, Unit, check_unit, plan, run

__all__ = [
    "DTYPES",
    "SECOND_MAX_SIZE",
    "Call",
    "Estimate",
    "Plan",
    "Reference",
    "Results",
    "Tally",
    "Unit",
    "case_calls",
    "check_subject",
    "check_unit",
    "choose_reference",
    "compare",
    "describe",
    "deviation",
    "estimate_options",
    "estimates",
    "op_calls",
    "op_support",
    "plan",
    "reference_for",
    "run",
    "second_estimate",
]
