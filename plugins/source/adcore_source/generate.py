"""The driver: f in, its generated derivative module out (cached), and the functions the backend calls.

`reverse_functions(fn, active)` -> (fwd, bwd): fwd(*args, **kwargs) -> (out, saved), bwd(saved, g)
-> the adjoints of the active positional arguments, in order (None for a zero one).
`forward_function(fn, active)` -> jvp: jvp(args, tangents, kwargs) -> (out, tangent_out).
`derivative_source(fn, mode, argnums)` -> the generated module's text.

One module per (f, mode, active arguments) holds f's derivative functions and those of the user
functions it calls (the emitters ask `Context.transformed` for them: recursion and mutual recursion
are one more name). The module is executed from its file in the disk cache, so a traceback shows
the generated line, and the same file can be imported and edited by hand. Caches: in memory by
the identities of f's code and of everything it reads (reads.py: a redefined or reloaded function,
a rebound global, is another module); the text by its structure (same code, same callables and
constants: only data values differ, bound when the module is loaded) in memory and on disk.
"""

from __future__ import annotations

import ast
import collections
import inspect
import threading
from collections.abc import Callable
from typing import Any

from adcore.errors import InvalidInputError
from adcore_source import calls, disk_cache, module_text, reads
from adcore_source.errors import SourceTransformError

MODES = ("reverse", "forward")
_MODULES_KEPT = 64  # loaded modules kept (each holds what its function read, arrays included)
_TEXTS_KEPT = 256
_modules: collections.OrderedDict = collections.OrderedDict()
_texts: collections.OrderedDict = collections.OrderedDict()
_lock = threading.Lock()


def reverse_functions(fn: Callable[..., Any], active: tuple[int, ...], compile: bool | str = False) -> tuple:
    """(fwd, bwd) for fn with respect to the positional arguments `active`: fwd(*args, **kwargs) ->
    (out, saved); bwd(saved, g) -> a tuple of the adjoints of the active arguments, in order."""
    root, bound = calls.unwrapped(fn)
    loaded = _loaded(root, "reverse", calls.shifted(active, bound), compile)
    fwd, bwd = loaded.functions
    if bound is None:
        return fwd, bwd
    return (lambda *args, **kwargs: fwd(*bound.args, *args, **{**bound.keywords, **kwargs})), bwd


def forward_function(
    fn: Callable[..., Any], active: tuple[int, ...], compile: bool | str = False
) -> Callable:
    """jvp(args, tangents, kwargs) -> (out, tangent_out), tangents one per active positional argument."""
    root, bound = calls.unwrapped(fn)
    (jvp,) = _loaded(root, "forward", calls.shifted(active, bound), compile).functions
    if bound is None:
        return jvp
    return lambda args, tangents, kwargs: jvp((*bound.args, *args), tangents, {**bound.keywords, **kwargs})


def derivative_source(
    fn: Callable[..., Any], mode: str = "reverse", argnums: int | tuple[int, ...] = 0
) -> str:
    """The generated module of fn's derivative (mode "reverse" or "forward") with respect to the
    positional arguments argnums: readable Python, one statement per line, which may be written to a
    file, edited and imported."""
    if mode not in MODES:
        raise InvalidInputError(f"derivative_source: mode must be 'reverse' or 'forward', got {mode!r}")
    active = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    root, bound = calls.unwrapped(fn)
    return _text(root, mode, calls.shifted(active, bound), reads.walk(root)).text


# --- the caches -----------------------------------------------------------------------------------


class _Loaded:
    """A generated module loaded for one set of values read: its callables and what keeps ids valid."""

    __slots__ = ("functions", "reached", "text")

    def __init__(self, functions: tuple, reached: list, text: module_text.Text) -> None:
        self.functions, self.reached, self.text = functions, reached, text


def _loaded(fn: Any, mode: str, active: tuple[int, ...], compile: bool | str) -> _Loaded:
    reached = reads.walk(fn)
    key = (reads.identity_key(reached), mode, active, compile)
    with _lock:
        hit = _modules.get(key)
        if hit is not None:
            _modules.move_to_end(key)
            return hit
    text = _text(fn, mode, active, reached)
    namespace = module_text.load(text, reached)
    functions = _entry_points(fn, mode, active, text, namespace, compile, reached)
    loaded = _Loaded(functions, reached, text)
    with _lock:
        _modules[key] = loaded
        while len(_modules) > _MODULES_KEPT:
            _modules.popitem(last=False)
    return loaded


def _text(
    fn: Any, mode: str, active: tuple[int, ...], reached: list, for_numba: bool = False
) -> module_text.Text:
    """The generated text for fn: from memory, from disk, or generated now (and stored in both).
    `for_numba`: the emitters' variant for numba (when they have one), which compile.py runs."""
    key = (reads.structure_key(reached), mode, active, for_numba)
    with _lock:
        hit = _texts.get(key)
        if hit is not None:
            _texts.move_to_end(key)
            return hit
    stem = module_text.stem_of(fn, mode) + ("_numba" if for_numba else "")
    disk_key = disk_cache.key_of([mode, repr(active), str(for_numba), *reads.source_parts(reached)])
    text = module_text.Text.from_disk(disk_cache.load(stem, disk_key))
    if text is not None and not all(
        i < len(reached) and n in reached[i].values for i, n in text.injected.values()
    ):
        text = None  # (cannot be, for the key covers what was read; but never bind from a wrong place)
    if text is None:
        text = module_text.assembled(generate(fn, mode, active, for_numba), fn, mode, active, reached)
        if text.reproducible:
            text.path = disk_cache.store(stem, disk_key, text.text, text.meta())
    text.keep = reached
    with _lock:
        _texts[key] = text
        while len(_texts) > _TEXTS_KEPT:
            _texts.popitem(last=False)
    return text


def clear_caches() -> None:
    """Forget every generated module held in memory (the disk cache stays)."""
    with _lock:
        _modules.clear()
        _texts.clear()
    module_text.clear_compiled()


# --- generation -----------------------------------------------------------------------------------


class Context:
    """What the emitters ask of the module being generated.

    - `bind(name, obj) -> str` (or `bind(obj)`): a module-level name for obj, `name` if free, else
      `name_2`, ...: never a name f's code uses, never another object's. Runtime helpers, template
      helpers and resolved callees are bound this way; f's own globals are bound by the driver.
    - `runtime(name) -> str`: `bind(name, adcore_source.runtime.<name>)`.
    - `transformed(g, mode, active) -> name` (mode "forward": g's jvp) or `(fwd, bwd)` names (mode
      "reverse"), for a user function g, or a lifted `Normalized`, with respect to its positional
      parameters `active`: generated into the same module (once; recursion is fine).
    - `taken(name) -> bool`: a module-level name already in use; a local named so would hide it.
    Comment lines: a statement `Expr(Constant("# text"))` becomes the comment `# text`.
    `for_numba`: the module is the variant compile.py runs under numba; an emitter that takes a
    `for_numba=True` keyword is asked for it (stacks numba can type: no None pushed, typed lists).
    """

    def __init__(self, for_numba: bool = False) -> None:
        self.for_numba = for_numba
        self.objects: dict[str, Any] = {}  # module-level name -> the object bound to it
        self.functions: dict[tuple, tuple[str, ...]] = {}  # (id(target), mode, active) -> its names
        self.targets: list[tuple[Any, str, tuple, tuple[str, ...]]] = []
        self.defs: list[ast.FunctionDef] = []
        self.norms: dict[str, Any] = {}  # a generated function's name -> the Normalized it came from
        self.local_names: set[str] = set()  # names the function being emitted uses itself
        self.bound_now: set[str] = set()  # names bound for it

    def bind(self, name: Any, obj: Any = reads._MISSING) -> str:
        if obj is reads._MISSING:
            name, obj = module_text.name_of(name), name
        for candidate in module_text.candidates(module_text.identifier(name)):
            if candidate in self.local_names or candidate in self.norms:
                continue
            held = self.objects.get(candidate, reads._MISSING)
            if held is obj or held is reads._MISSING:
                self.objects[candidate] = obj
                self.bound_now.add(candidate)
                return candidate
        raise AssertionError("candidates are endless")  # pragma: no cover

    def runtime(self, name: str) -> str:
        from adcore_source import runtime, tier2

        return self.bind(name, getattr(tier2 if name in ("call_vjp", "call_jvp") else runtime, name))

    def taken(self, name: str) -> bool:
        return name in self.objects or name in self.norms

    def transformed(self, target: Any, mode: str, active: tuple) -> Any:
        key = (id(target), mode, tuple(active))
        names = self.functions.get(key)
        if names is None:
            stem = module_text.identifier(getattr(target, "__name__", None) or getattr(target, "name", "f"))
            stem = stem.rstrip("_") if stem == "lambda_" else stem  # (lambda_jvp, not lambda__jvp)
            for base in module_text.candidates(stem):
                names = (f"{base}_jvp",) if mode == "forward" else (f"{base}_fwd", f"{base}_bwd")
                if not any(self.taken(n) or n in self.local_names for n in names):
                    break
            self.functions[key] = names
            self.norms.update(dict.fromkeys(names))
            self.targets.append((target, mode, tuple(active), names))
        return names[0] if mode == "forward" else names

    def emit(self, target: Any, mode: str, active: tuple, names: tuple[str, ...]) -> None:
        """Generate target's functions under `names`; f's globals they read bound (renamed on a clash)."""
        from adcore_source.normalize import normalized

        norm = target if hasattr(target, "body") and hasattr(target, "namespace") else normalized(target)
        if norm.copied_params and target is not self.targets[0][0] and not hasattr(target, "body"):
            # a callee's write into its parameter reaches its caller's array in NumPy, and the
            # generated callee writes into a copy: the caller would read the old values
            raise SourceTransformError(
                f"the source transformation cannot take {norm.name}, called from the function being "
                f"differentiated, writing into its parameter {norm.copied_params[0]!r} in place "
                f"({norm.filename}:{norm.first_line}): its caller would see the change, which the "
                f"derivative code does not follow; return the changed value from {norm.name} and assign it"
            )
        self.local_names = module_text.identifiers(norm)
        for _ in range(8):  # a helper bound to a name the emitter then gave a local: bind it anew
            self.bound_now = set()
            defs = _emitted(norm, mode, active, self)
            locals_ = set().union(*(module_text.locals_of(d) for d in defs))
            clash = (self.bound_now | set(self.norms)) & locals_
            if not clash:
                break
            self.local_names |= clash
        else:
            raise SourceTransformError(
                f"adcore-source: generated names clash in {norm.name} ({sorted(clash)})"
            )
        for d, name in zip(defs, names):
            d.name = name
            self.norms[name] = norm
        self._bind_globals(defs, norm, locals_)
        self.defs += defs

    def _bind_globals(self, defs: list[ast.FunctionDef], norm: Any, locals_: set[str]) -> None:
        renames: dict[str, str] = {}
        for name in sorted(set().union(*(module_text.free_names(d) for d in defs)) - locals_):
            if name in self.bound_now or name in self.norms:
                continue
            if name not in norm.namespace:
                if module_text.is_builtin(name):
                    continue
                raise SourceTransformError(
                    f"adcore-source: the code generated for {norm.name} reads {name!r}, which nothing binds "
                    "(a bug in adcore-source)"
                )
            obj = norm.namespace[name]
            if module_text.is_builtin(name) and module_text.builtin(name) is obj:
                continue  # len, range: the module's builtins already
            for candidate in module_text.candidates(name):
                held = self.objects.get(candidate, reads._MISSING)
                if (
                    candidate not in locals_
                    and candidate not in self.norms
                    and (held is obj or held is reads._MISSING)
                ):
                    break
            self.objects[candidate] = obj
            if candidate != name:
                renames[name] = candidate
        for d in defs:
            module_text.rename_globals(d, renames, locals_)


def _emitted(norm: Any, mode: str, active: tuple, ctx: Context) -> list[ast.FunctionDef]:
    if mode == "forward":
        from adcore_source.forward import emit_forward as emit
    else:
        from adcore_source.reverse import emit_reverse as emit
    if ctx.for_numba:
        return list(_as_list(emit(norm, active, ctx, for_numba=True)))
    return list(_as_list(emit(norm, active, ctx)))


def _as_list(emitted: Any) -> Any:
    return [emitted] if isinstance(emitted, ast.FunctionDef) else emitted


def has_numba_variant(mode: str) -> bool:
    """Whether the emitter of `mode` writes a variant for numba (`for_numba=True`: typed stacks, no None)."""
    if mode == "forward":
        from adcore_source.forward import emit_forward as emit
    else:
        from adcore_source.reverse import emit_reverse as emit
    return "for_numba" in inspect.signature(emit).parameters


def generate(fn: Any, mode: str, active: tuple[int, ...], for_numba: bool = False) -> Context:
    """fn's derivative functions and those of every user function they call, as ASTs in ctx."""
    ctx = Context(for_numba)
    ctx.transformed(fn, mode, calls.active_params(fn, active))
    done = 0
    while done < len(ctx.targets):  # emitting one may ask for more
        ctx.emit(*ctx.targets[done])
        done += 1
    return ctx


# --- the callables the backend gets ---------------------------------------------------------------


def _entry_points(fn, mode, active, text, namespace, compile, reached) -> tuple:
    generated = [namespace[name] for name in text.entry]
    if compile:
        from adcore_source.compile import compiled

        variant = _text(fn, mode, active, reached, for_numba=True) if has_numba_variant(mode) else text
        generated = compiled(generated, variant, reached, compile)
    call = calls.Caller(fn, generated[0], active)
    if mode == "forward":
        return (call.jvp,)
    return call.fwd, call.backward(generated[1])
