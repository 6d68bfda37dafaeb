"""no_grad / enable_grad: per-thread switches for whether reverse mode records (seed 001 no_grad, has_grad)."""

from __future__ import annotations

import threading
from contextlib import ContextDecorator

from adcore.errors import GradientError

_local = threading.local()


def _modes() -> list[bool]:
    modes = getattr(_local, "modes", None)
    if modes is None:
        modes = _local.modes = []
        _local.owners = []  # modes[i] was pushed by the `with` whose token is owners[i]
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

    def __init__(self) -> None:
        # one (thread id, that thread's modes and owners, token) per open `with`: an instance
        # may be entered again, nested or from several threads
        self._open: list[tuple[int, list[bool], list[object], object]] = []

    def _recreate_cm(self) -> _Switch:
        return type(self)()  # a decorated function gets a fresh switch per call

    def __enter__(self) -> _Switch:
        modes, token = _modes(), object()
        modes.append(self.recording)
        _local.owners.append(token)
        self._open.append((threading.get_ident(), modes, _local.owners, token))
        return self

    def __exit__(self, *exc: object) -> None:
        me = threading.get_ident()
        mine = [k for k, entry in enumerate(self._open) if entry[0] == me]
        if mine:
            _, modes, owners, token = self._open.pop(mine[-1])
            _close(modes, owners, token, with_those_above=True)  # misnested blocks left open above it
            return
        name = type(self).__name__
        if not self._open:
            raise GradientError(f"{name}() exited without being entered; use it as `with {name}():`")
        # Entered on another thread: end it there as well (only this switch, found by its
        # token, so that thread's other switches keep their places), and leave this thread alone.
        owner, modes, owners, token = self._open.pop()
        _close(modes, owners, token, with_those_above=False)
        raise GradientError(
            f"{name}() was entered on thread {owner} and exited on thread {me}: grad mode is per "
            f"thread, so enter and exit it on the same thread (a `with {name}():` block, or "
            f"@{name}() on the function the other thread runs). That switch no longer applies "
            "on either thread."
        )


def _close(modes: list[bool], owners: list[object], token: object, with_those_above: bool) -> None:
    """Remove the switch `token` pushed (if an outer misnested exit has not already)."""
    for i in range(len(owners) - 1, -1, -1):
        if owners[i] is token:
            end = len(owners) if with_those_above else i + 1
            del modes[i:end], owners[i:end]
            return


class no_grad(_Switch):
    """Within this block (or decorated function) reverse mode records nothing."""

    recording = False


class enable_grad(_Switch):
    """Within this block reverse mode records again, even inside `no_grad`."""

    recording = True
