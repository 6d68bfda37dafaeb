"""f's own errors, typed: a plain ValueError that f's code (or NumPy's, called from it) raised while a
backend ran it becomes an InvalidValueError naming the backend, where adcore's typed errors pass."""

from __future__ import annotations

from typing import Any

from adcore.backend import Backend
from adcore.errors import InvalidValueError


class typed_errors_of_f:
    """`with typed_errors_of_f(be)`: a plain ValueError raised by f's own code (NumPy's max of an
    empty array, where f runs on plain arrays) re-raised as an InvalidValueError naming the backend
    and f, from the original. adcore's typed errors and NumPy's subclasses (AxisError, also an
    IndexError) pass as they are. (A class, not a generator: it wraps every derivative call.)"""

    __slots__ = ("be",)

    def __init__(self, be: Backend) -> None:
        self.be = be

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, e: Any, traceback: Any) -> None:
        if kind is ValueError:
            raise_typed(self.be, e)


def raise_typed(be: Backend, e: ValueError) -> None:
    """Raise e as an InvalidValueError when f's own code raised it (a plain ValueError); else return."""
    if e.__class__ is not ValueError or not _raised_in_f(e):
        return  # one that passes as it is
    raise InvalidValueError(
        f"backend {be.name!r}: f raised {type(e).__name__}: {e}. It came from f's own code (or NumPy's "
        "called from it on plain arrays: this backend's, or any on an empty input), not from adcore: fix "
        "that call in f, or the input that makes it fail (e.g. the max of an empty array)"
    ) from e


_CALLERS_OF_F = ("adcore.flatten", "adcore.api")


def _raised_in_f(e: BaseException) -> bool:
    """Whether e was raised by f's own code (or NumPy's called from it): the traceback passes
    through the call of f, and the frame that raised it is not adcore's."""
    frames = []
    tb = e.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    through_f = any(  # flatten.Flat.__call__, or the plain-array path's (adcore.api), which call f
        frame.f_code.co_name == "__call__" and frame.f_globals.get("__name__") in _CALLERS_OF_F
        for frame in frames
    )
    raiser = frames[-1].f_globals.get("__name__", "") if frames else ""
    return through_f and not raiser.startswith("adcore")
