"""no_grad / enable_grad: per-thread switches for whether reverse mode records (seed 001 no_grad, has_grad)."""

from __future__ import annotations

import threading
from contextlib import ContextDecorator

_local = threading.local()


def _modes() -> list[bool]:
    modes = getattr(_local, "modes", None)
    if modes is None:
        modes = _local.modes = []
    return modes


def depth() -> int:
    """How many switches are active now; a trace remembers this when it is created."""
    return len(_modes())


def is_recording(since: int = 0) -> bool:
    """Whether a trace created at switch depth `since` records now.

    Only switches entered after the trace was created count, as in torch.func: a
    `no_grad()` around `adcore.grad(f)(x)` does not stop it, one inside `f` does.
    Eager Tensors were created at depth 0, so every switch counts for them.
    """
    modes = getattr(_local, "modes", None)
    return not modes or len(modes) <= since or modes[-1]


class _Switch(ContextDecorator):
    recording = True

    def __enter__(self) -> _Switch:
        _modes().append(self.recording)
        return self

    def __exit__(self, *exc: object) -> None:
        _modes().pop()


class no_grad(_Switch):
    """Within this block (or decorated function) reverse mode records nothing."""

    recording = False


class enable_grad(_Switch):
    """Within this block reverse mode records again, even inside `no_grad`."""

    recording = True
