"""The adcore tools: `adcore-<name>` runs adcore with one backend and its options, named here.

An eval module gets the name (its `prepare(input, backend)`), keys its UNSUPPORTED reasons by it, and
asks adcore with `**options(backend)`. The source backend's two tools are one backend run two ways:
its generated code as plain Python, and compiled (compile=True: numba where its constructs allow).
"""

from __future__ import annotations

from typing import Any

BACKENDS: dict[str, dict[str, Any]] = {
    "reverse": {"backend": "reverse"},
    "forward": {"backend": "forward"},
    "symbolic": {"backend": "symbolic"},
    "numeric": {"backend": "numeric"},
    "source": {"backend": "source"},
    "source-compiled": {"backend": "source", "compile": True},
}


def options(name: str) -> dict[str, Any]:
    """The keyword arguments that ask adcore for the tool's backend: `backend=` and its options."""
    return dict(BACKENDS[name])
