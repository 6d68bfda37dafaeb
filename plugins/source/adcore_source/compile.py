"""`compile=True` / `"numba"`: the generated functions jitted with numba, lazily, where numba takes them.

numba is imported on the first call whose arguments are all plain numbers and arrays (a traced
value, a pytree, a Masked cotangent run the Python version), never by `import adcore_source`.
The generated text is executed a second time into a namespace of its own where each generated
function is `numba.njit`-ed (calls between them stay compiled; indices bounds-checked and division
by zero NumPy's inf or nan, as in Python), each adcore op the templates call
is its NumPy impl, and the runtime helpers are numba versions of themselves (for numbers and for
arrays of up to 2 dimensions). Where numba refuses a construct, one SourceCompileWarning names it
and the Python version runs: the result is the same either way. Compiled code is cached on disk
(`cache=True`, beside the generated file) when everything it reads is in its text.
"""

from __future__ import annotations

import re
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from adcore.errors import InvalidInputError
from adcore_source import module_text


class SourceCompileWarning(UserWarning):
    """numba could not compile a generated function (the construct is named); its Python version runs."""


_warned: set[tuple[str, str]] = set()
_numba_lock = threading.Lock()


def compiled(
    functions: list[Callable], text: module_text.Text, reached: list, how: bool | str
) -> list[Callable]:
    """The entry functions (f's jvp, or its fwd and bwd), each run by numba on its calls with plain
    numbers and arrays. `text` is the module numba compiles: the one `functions` come from, or the
    emitters' variant for numba; a fwd's record goes to the bwd of the same module either way."""
    if how not in (True, "numba"):
        raise InvalidInputError(f"adcore-source: compile must be False, True or 'numba', got {how!r}")
    jit = _Jit(text, reached)
    if len(functions) == 1:
        return [_Compiled(jit, text.entry[0], functions[0])]
    fwd_name, bwd_name = text.entry
    return [_CompiledForward(jit, fwd_name, functions[0]), _CompiledBackward(jit, bwd_name, functions[1])]


class _Compiled:
    """One entry function: numba's version for plain arguments, else (or where numba refused) Python's."""

    __slots__ = ("jit", "name", "python", "__wrapped__")

    def __init__(self, jit: _Jit, name: str, python: Callable) -> None:
        self.jit, self.name, self.python, self.__wrapped__ = jit, name, python, python

    def __call__(self, *args: Any) -> Any:
        done, out = self.jit.run(self.name, args)
        return out if done else self.python(*args)


class _Record:
    """What a compiled fwd saved: only the bwd of its own module reads it."""

    __slots__ = ("saved",)

    def __init__(self, saved: Any) -> None:
        self.saved = saved


class _CompiledForward(_Compiled):
    __slots__ = ()

    def __call__(self, *args: Any) -> Any:
        done, out = self.jit.run(self.name, args)
        if done:
            return out[0], _Record(out[1])
        return self.python(*args)


class _CompiledBackward(_Compiled):
    __slots__ = ()

    def __call__(self, saved: Any, g: Any) -> Any:
        if saved.__class__ is not _Record:
            return self.python(saved, g)
        if not _plain(saved.saved) and self.name not in self.jit.refused:
            self.jit.refuse(
                self.name,
                None,
                "the forward sweep's record holds a list numba cannot type (empty, or None among values)",
            )
        done, out = self.jit.run(self.name, (saved.saved, g))
        return out if done else self.jit.python(self.name)(saved.saved, g)


class _Jit:
    """The numba namespace of one loaded module (made on first use), and the module's Python twin."""

    def __init__(self, text: module_text.Text, reached: list) -> None:
        self.text, self.reached = text, reached
        self.namespace: dict[str, Any] | None = None
        self.python_namespace: dict[str, Any] | None = None
        self.refused: set[str] = set()
        self.errors: tuple[type, ...] = ()

    def run(self, name: str, args: tuple) -> tuple[bool, Any]:
        """(True, numba's result), or (False, None) where numba does not run it."""
        if name in self.refused or not all(_plain(a) for a in args):
            return False, None
        fn = self.function(name)
        if fn is None:
            return False, None
        try:
            return True, _numpy_numbers(fn(*_scalars(args)), _float_type(args))
        except Exception as e:  # numba's refusals; anything else is f's own error
            if not self.is_refusal(e):
                raise
            self.refuse(name, e)
            return False, None

    def python(self, name: str) -> Callable:
        """`name` of the compiled module run by Python (the variant's own twin, when it is one)."""
        if self.python_namespace is None:
            self.python_namespace = module_text.load(self.text, self.reached)
        return self.python_namespace[name]

    def function(self, name: str) -> Callable | None:
        if self.namespace is None:
            with _numba_lock:
                if self.namespace is None:
                    self.namespace = self._namespace()
        return self.namespace.get(name)

    def _namespace(self) -> dict[str, Any]:
        try:
            import numba
            from numba.core.errors import NumbaError
        except ImportError:
            self._warn_all("numba is not installed (pip install 'adcore-source[compile]')")
            return {}
        self.errors = (NumbaError,)
        frozen = [
            n for n, v in self._injected().items() if not (_plain_scalar(v) or callable(v) or _is_module(v))
        ]
        if frozen:  # numba would freeze these arrays at compile time: an in-place change would not reach it
            self._warn_all(f"it reads {', '.join(sorted(frozen))} from outside (numba freezes such values)")
            return {}
        namespace = module_text.load(self.text, self.reached)
        from adcore_source import numba_runtime

        numba_runtime.substitute(namespace)
        cache = self.text.path is not None and not self.text.injected and not self.text.fixed
        for name in self.text.functions:
            namespace[name] = numba.njit(cache=cache, error_model="numpy", boundscheck=True)(namespace[name])
        return namespace

    def _injected(self) -> dict[str, Any]:
        return {
            **self.text.fixed,
            **{n: self.reached[i].values[k] for n, (i, k) in self.text.injected.items()},
        }

    def is_refusal(self, e: Exception) -> bool:
        return bool(self.errors) and isinstance(e, self.errors)

    def refuse(self, name: str, e: Exception | None, why: str = "") -> None:
        self.refused.add(name)
        self._warn(name, why or construct_of(str(e)))

    def _warn_all(self, why: str) -> None:
        self.refused.update(self.text.entry)
        self._warn(self.text.entry[0], why)

    def _warn(self, name: str, why: str) -> None:
        key = (self.text.text, name)
        if key in _warned:
            return
        _warned.add(key)
        warnings.warn(
            f"adcore-source: numba cannot compile {name}: {why}; the Python version runs (the same result)",
            SourceCompileWarning,
            stacklevel=4,
        )


_UNTYPED = re.compile(r"Untyped global name '(\w+)'")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FILE = re.compile(r'File "([^"]+)", line (\d+):')


def construct_of(message: str) -> str:
    """What numba refused, in a line: the name or operation, and the generated line it is on."""
    lines = [line.rstrip() for line in _ANSI.sub("", message).splitlines()]
    m = _UNTYPED.search(message)
    if m:
        what = f"the call of {m.group(1)} (a Python function numba cannot type)"
    else:
        said = [
            line.strip()
            for line in lines
            if line.strip()
            and not line.startswith(("Failed in", "During:", "File "))
            and "pipeline" not in line
        ]
        what = said[0] if said else "a construct it does not support"
    for i, line in enumerate(lines):
        where = _FILE.search(line)
        if where:
            marked = [lines[k - 1].strip() for k in range(i + 2, len(lines)) if lines[k].strip() == "^"]
            shown = marked[0] if marked else ""
            name = where.group(1).replace("\\", "/").rsplit("/", 1)[-1]
            what += f", at {name}:{where.group(2)}" + (f" `{shown}`" if shown else "")
            break
    return what


def _scalars(args: tuple) -> tuple:
    """0-d arrays as NumPy scalars: numba types `x = f(x)` in a loop as one type, and an
    operation on a 0-d array gives a scalar."""
    return tuple(a[()] if a.__class__ is np.ndarray and a.ndim == 0 else a for a in args)


def _float_type(args: Any) -> type:
    """The NumPy float type of the arguments' computation: float32 when every float in them is
    float32 (a Python float is weak, as in NumPy), else float64."""
    kinds: set[Any] = set()
    stack = list(args)
    while stack:
        a = stack.pop()
        if a.__class__ is tuple:
            stack.extend(a)
        elif a.__class__ is list and a:
            stack.append(a[0])
        elif a.__class__ is np.ndarray or isinstance(a, np.generic):
            if a.dtype.kind in "fc":
                kinds.add(np.dtype(a.dtype).type(0).real.dtype.type)
    return np.float32 if kinds == {np.float32} else np.float64


def _numpy_numbers(out: Any, float_type: type) -> Any:
    """numba's result with its Python floats as the NumPy scalars Python's version returns
    (numba boxes a float64 or float32 as a Python float)."""
    cls = out.__class__
    if cls is float:
        return float_type(out)
    if cls is complex:
        return (np.complex64 if float_type is np.float32 else np.complex128)(out)
    if cls is tuple:
        return tuple(_numpy_numbers(v, float_type) for v in out)
    return out


def _plain(x: Any) -> bool:
    """A value numba takes as it is: a number, a numeric array, None, a tuple of such, or a
    non-empty list of one type of them (numba types a list by its first entry: a list mixing None
    and numbers, or arrays of two dtypes, crashes it)."""
    cls = x.__class__
    if cls is float or cls is int or cls is bool or x is None:
        return True
    if cls is np.ndarray or isinstance(x, np.generic):
        return x.dtype.kind in "biufc"
    if cls is tuple:
        return all(_plain(v) for v in x)
    if cls is list:
        return bool(x) and x[0] is not None and all(_alike(v, x[0]) for v in x) and all(_plain(v) for v in x)
    return False


def _alike(a: Any, b: Any) -> bool:
    if a.__class__ is not b.__class__:
        return False
    if a.__class__ is np.ndarray:
        return a.dtype == b.dtype and a.ndim == b.ndim
    if a.__class__ is tuple:
        return len(a) == len(b) and all(_alike(x, y) for x, y in zip(a, b))
    return not isinstance(a, list)  # (a list of lists: reflected lists nest badly)


def _is_module(x: Any) -> bool:
    return isinstance(x, types.ModuleType)


def _plain_scalar(x: Any) -> bool:
    return x.__class__ in (float, int, bool, complex) or isinstance(x, np.generic)
