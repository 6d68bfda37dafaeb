"""GradBench's hello eval: square a number, and differentiate the square."""

from __future__ import annotations

import adcore
from adcore_tool.backends import options

UNSUPPORTED: dict[str, str] = {}


def prepare(input: float, backend: str) -> tuple[float, str]:
    return float(input), backend


def square(prepared: tuple[float, str]) -> float:
    x, _ = prepared
    return x * x


def double(prepared: tuple[float, str]) -> float:
    x, backend = prepared
    return float(adcore.grad(lambda y: y * y, **options(backend))(x))
