"""A module's full backward hooks (torch's register_full_backward_pre_hook / _hook), on adcore.custom_vjp.

`Module.__call__` calls `call_with_backward_hooks` in place of `forward` when the module or the
global registries hold backward hooks. The call becomes one `adcore.custom_vjp` function of every
traced value it uses: the positional inputs, the traced leaves of the other arguments and of the
keyword arguments, and the module's parameters (the leaves of its pytree, so no derivative is lost
to a closure). Its body runs the forward once, under reverse mode, and keeps the pullback; its
backward rule runs, in torch's order:

1. the backward pre-hooks, `hook(module, grad_output) -> None | grad_output`, global ones first;
   grad_output is a tuple with one entry per leaf of the output (a pytree): the cotangent of a
   float array, None for any other leaf (an index array, a string), as torch's for a non-Tensor;
2. the pullback of (the possibly replaced) grad_output through the forward: every input's and
   every parameter's cotangent, so a pre-hook's replacement reaches the parameters too, as torch's;
3. the hooks, `hook(module, grad_input, grad_output) -> None | grad_input`, global ones first;
   grad_input has one entry per positional argument of the call: the cotangent of that argument
   where it is a differentiated float array, else None. A replacement is what flows on to the
   inputs (not to the parameters: their gradients were already computed, as in torch).

So grad_input is the gradient with respect to the module's own inputs, never an inner op's
(torch's old register_backward_hook, pytorch#598). A replacement of the wrong type, length, shape or
dtype is a typed error naming the module and the hook, raised in the backward pass.

The hooks fire wherever a VJP runs through the module: reverse mode (backend="reverse", and
"source" with mode="reverse"), adcore.vjp, Jacobians by pullbacks (once per pullback, or once for a
vmapped batch of them), checkpoint, vmap(grad(f)), and the inner reverse sweep of a forward-over-reverse Hessian (once per sweep,
on traced cotangents). Where a derivative would go through the module without a VJP (forward,
numeric, symbolic, sparsity, source/forward, a reverse-over-forward Hessian), or evaluates it more
than once (finite differences), the call is an UnsupportedByBackendError, never a silent skip
(`adcore_nn.evaluation.backend_without_vjp`); so is a vmap inside the derivative (`grad(vmap(f))`,
where the backward pass would run apart from its forward): `vmap(grad(f))` fires them once, on the
batch. Hooks get read-only arrays (torch: a hook must not modify its arguments; a cotangent may be
the array the backward pass hands on elsewhere), and a write is a typed error.

Where adcore differs from torch: forward runs on the module rebuilt from its traced leaves (as the
engine's pytree does), so the module the hooks receive is that one; outputs may be any pytree of
arrays (torch's hooks see Tensors and tuples of them only); hooks see an output's cotangent as an
array of zeros where nothing flows into it (torch: None); a hook writing into its arguments is an
error (torch only says not to).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

import adcore
from adcore import ops
from adcore.core import Tracer, plain_numbers
from adcore.errors import InvalidOutputError, InvalidValueError, StateChangedError, UnsupportedByBackendError
from adcore_nn import evaluation

__all__ = ["call_with_backward_hooks"]


def _global_hooks() -> tuple[dict, dict]:
    """The global backward pre-hooks and hooks (adcore_nn.hooks' registries)."""
    from adcore_nn import hooks  # noqa: PLC0415 (module.py imports this module; hooks is the registry module)

    return hooks._global_backward_pre_hooks, hooks._global_backward_hooks


def call_with_backward_hooks(
    module: Any, args: tuple, kwargs: dict, forward: Callable[..., Any] | None = None
) -> Any:
    """module.forward(*args, **kwargs), with the module's and the global backward hooks fired in the
    backward pass of any reverse-mode derivative through it.

    `forward(module, *args, **kwargs)`, when given, runs instead (module.__call__ may pass its forward
    followed by the forward hooks, so grad_output is the gradient of what the call returns, as in
    torch); it is called with the module rebuilt from its traced parameters.
    """
    run = _forward if forward is None else forward
    global_pre, global_hooks = _global_hooks()
    pre_hooks = [*global_pre.values(), *module._backward_pre_hooks.values()]
    hooks = [*global_hooks.values(), *module._backward_hooks.values()]
    leaves, treedef = adcore.tree.flatten((args, kwargs, module))
    without = evaluation.backend_without_vjp(leaves)
    if without is not None and (pre_hooks or hooks):
        raise UnsupportedByBackendError(_refusal(module, pre_hooks + hooks, without))
    traced = [k for k, leaf in enumerate(leaves) if isinstance(leaf, Tracer)]
    if not pre_hooks and not hooks or not any(evaluation.differentiated(leaves[k]) for k in traced):
        return run(
            module, *args, **kwargs
        )  # nothing differentiates the call: no backward pass to hook (torch's too)
    if evaluation.batched_inside_derivative(leaves):
        raise UnsupportedByBackendError(
            f"module {_name(module)} has backward hooks and is called under adcore.vmap inside a derivative "
            "(grad(vmap(f))): its backward pass would run apart from the forward that made it, and the "
            "forward run again per example. Put vmap outside, vmap(grad(f)) (per-example gradients: the "
            "hooks then fire once, on the batch), or remove the hooks"
        )
    call = _Call(module, run, pre_hooks, hooks, args, leaves, treedef, traced)
    packed = _hooked(call, [leaves[k] for k in traced])
    return call.unpacked(packed)


def _forward(module: Any, *args: Any, **kwargs: Any) -> Any:
    return module.forward(*args, **kwargs)


def _refusal(module: Any, hooks: list, backend: str) -> str:
    try:
        estimates = adcore.get_backend(backend.partition("/")[0]).estimates
    except adcore.AdcoreError:  # a transformation named by its class
        estimates = False
    how = (
        "estimates by evaluating f again at perturbed values, where they would fire once per evaluation"
        if estimates
        else "differentiates it without a VJP, so they cannot fire"
    )
    return (
        f"module {_name(module)} has backward hooks ({', '.join(_name(h) for h in hooks)}), which fire in a "
        f"reverse-mode backward pass through the module; backend {backend!r} {how}. Differentiate with "
        "backend='reverse' (or remove the hooks with their handles' .remove())"
    )


def _name(thing: Any) -> str:
    if not callable(thing) or hasattr(thing, "_parameters"):
        return type(thing).__name__
    return getattr(thing, "__qualname__", None) or getattr(thing, "__name__", None) or repr(thing)


def _is_float(value: Any) -> bool:
    """An output leaf with a gradient: a float array or number."""
    return isinstance(value, (np.ndarray, np.generic, Tracer)) and np.dtype(value.dtype).kind == "f"


def _is_input(value: Any) -> bool:
    """A positional argument torch's hooks report a gradient for: one float array."""
    return isinstance(value, (np.ndarray, Tracer)) and np.dtype(value.dtype).kind == "f"


class _Call:
    """One hooked module call: what its body, rule and hooks share (the custom function's static
    argument). Its body keeps the pullback it computed (`kept`), so the forward runs once."""

    def __init__(self, module, run, pre_hooks, hooks, args, leaves, treedef, traced) -> None:
        self.module, self.run, self.pre_hooks, self.hooks = module, run, pre_hooks, hooks
        self.leaves, self.treedef, self.traced = leaves, treedef, traced
        self.wanted = [i for i, k in enumerate(traced) if evaluation.differentiated(leaves[k])]
        # grad_input's slots: per positional argument, its position among the op's inputs, or None
        self.inputs: list[int | None] = []
        start, position = 0, {k: i for i, k in enumerate(traced)}
        for arg in args:
            count = len(adcore.tree.leaves(arg))
            k = start if count == 1 and leaves[start] is arg and _is_input(arg) else None
            i = position.get(k) if k is not None else None
            self.inputs.append(i if i in self.wanted else None)
            start += count
        self.kept: tuple | None = None  # (the body's values, its packed output, pullback)
        self.layout: list = []  # per output leaf: (shape, dtype) of a float array, or the leaf itself

    # --- the forward -----------------------------------------------------------------------

    def output(self, values: list) -> Any:
        """The packed output of forward at these values of the op's inputs."""
        leaves = list(self.leaves)
        for k, value in zip(self.traced, values):
            leaves[k] = value
        args, kwargs, module = adcore.tree.unflatten(self.treedef, leaves)
        return self.pack(self.run(module, *args, **kwargs))

    def pack(self, out: Any) -> Any:
        """The output's float arrays as one array (the custom function returns one), the layout kept."""
        leaves, self.out_def = adcore.tree.flatten(out)
        for x in leaves:
            if isinstance(x, Tracer) and np.dtype(x.dtype).kind == "c":  # would pass through underived
                raise InvalidOutputError(
                    f"module {_name(self.module)} has backward hooks and its forward returned a complex array "
                    f"({x.dtype}); the hooks' gradients are of real outputs: return its real and imaginary "
                    "parts (anp.real, anp.imag) as two outputs"
                )
        self.layout = [(np.shape(x), np.dtype(x.dtype)) if _is_float(x) else x for x in leaves]
        floats = [x for x in leaves if _is_float(x)]
        if not floats:
            raise InvalidOutputError(
                f"module {_name(self.module)} has backward hooks but its forward returned no float array "
                f"({type(out).__name__}); there is no gradient for them to see"
            )
        if len(leaves) == 1:
            return floats[0]
        dtype = np.result_type(*[x.dtype for x in floats])
        return ops.concatenate(
            *[ops.astype(ops.reshape(x, shape=(-1,)), dtype=dtype) for x in floats], axis=0
        )

    def pieces(self, packed: Any) -> list:
        """Per output leaf: its float array cut from `packed`, or the non-float leaf itself."""
        if len(self.layout) == 1:
            return [packed]
        out, start = [], 0
        for entry in self.layout:
            if not _is_layout(entry):
                out.append(entry)
                continue
            shape, dtype = entry
            size = int(np.prod(shape))
            part = ops.reshape(ops.getitem(packed, index=slice(start, start + size)), shape=shape)
            out.append(part if part.dtype == dtype else ops.astype(part, dtype=dtype))
            start += size
        return out

    def unpacked(self, packed: Any) -> Any:
        return adcore.tree.unflatten(self.out_def, self.pieces(packed))

    def body(self, values: list) -> Any:
        """Forward under reverse mode, once: the packed output, the pullback kept for the rule."""
        wanted = self.wanted

        def f(*differentiated: Any) -> Any:
            full = list(values)
            for i, value in zip(wanted, differentiated):
                full[i] = value
            return self.output(full)

        # the reverse backend's own contract, not adcore.vjp: the engine's copies of the arguments and
        # cotangents (for a caller who keeps them) would copy every parameter on every call
        primals = tuple(values[i] for i in wanted)
        packed, pullback = adcore.get_backend("reverse").vjp(f, primals, range(len(primals)))
        self.kept = (list(values), packed, functools.partial(_cotangents, pullback, primals))
        return packed

    def pullback(self, values: list) -> tuple[Any, Callable]:
        """The body's packed output and pullback at these values: the kept ones when the body ran on
        them; else forward again, which must give the same output (it read no changed state)."""
        kept = self.kept
        if kept is not None and len(kept[0]) == len(values) and all(a is b for a, b in zip(kept[0], values)):
            return kept[1], kept[2]
        before = kept[1] if kept is not None else None
        packed = self.body(values)
        if before is not None and not np.array_equal(
            plain_numbers(packed), plain_numbers(before), equal_nan=True
        ):
            raise StateChangedError(
                f"module {_name(self.module)}: its forward, run again for its backward hooks' pass (under "
                "vmap), returned another value: it read state that changed (a random draw, a global). Draw "
                "randomness outside the module call, or remove the backward hooks"
            )
        return self.kept[1], self.kept[2]

    # --- the backward ----------------------------------------------------------------------

    def backward(self, pullback: Callable, g: Any) -> list:
        """The hooks around the pullback of g: one cotangent per op input (None: zero)."""
        grad_output = tuple(
            _readonly(p) if _is_layout(e) else None for p, e in zip(self.pieces(g), self.layout)
        )
        for hook in self.pre_hooks:
            result = self.run_hook(hook, "pre-hook", grad_output)
            if result is not None:
                grad_output = self.checked(hook, "grad_output", result, grad_output, "pre-hook")
        cotangents = pullback(self.pack_cotangent(grad_output))
        found: list = [None] * len(self.traced)
        for i, ct in zip(self.wanted, cotangents):
            found[i] = ct
        grad_input = tuple(None if i is None else _readonly(found[i]) for i in self.inputs)
        for hook in self.hooks:
            result = self.run_hook(hook, "hook", grad_input, grad_output)
            if result is not None:
                grad_input = self.checked(hook, "grad_input", result, grad_input, "hook")
        for i, value in zip(self.inputs, grad_input):
            if i is not None:
                found[i] = value  # None: no gradient flows on, as torch's
        return found

    def run_hook(self, hook: Any, kind: str, *grads: tuple) -> Any:
        try:
            return hook(self.module, *grads)
        except ValueError as e:
            if "read-only" not in str(e):
                raise
            # (the message must not say "read-only": the engine takes that for f writing into an input)
            raise InvalidValueError(
                f"module {_name(self.module)}: backward {kind} {_name(hook)} wrote into one of its gradient "
                f"arguments in place ({type(e).__name__}), which could change another gradient; as in torch, "
                "a hook must not modify its arguments: return new arrays instead"
            ) from e

    def pack_cotangent(self, grad_output: tuple) -> Any:
        floats = [e for e in self.layout if _is_layout(e)]
        parts = [np.zeros(*e) if g is None else g for g, e in zip(grad_output, self.layout) if _is_layout(e)]
        if len(self.layout) == 1:
            return parts[0]
        dtype = np.result_type(*[d for _, d in floats])
        return ops.concatenate(*[ops.astype(ops.reshape(p, shape=(-1,)), dtype=dtype) for p in parts], axis=0)

    def checked(self, hook: Any, what: str, result: Any, expected: tuple, kind: str) -> tuple:
        """A hook's replacement of grad_output or grad_input: a tuple like `expected`, each entry None
        or an array of its entry's shape and dtype (None where `expected` has None)."""
        where = f"module {_name(self.module)}: backward {kind} {_name(hook)} returned"
        if not isinstance(result, (tuple, list)):
            raise InvalidOutputError(
                f"{where} {type(result).__name__}; it returns None or a tuple of {len(expected)} {what} entries"
            )
        if len(result) != len(expected):
            raise InvalidOutputError(
                f"{where} {len(result)} {what} entries; the module's call has {len(expected)}: return one per entry "
                f"it was given (None where no gradient flows)"
            )
        for j, (new, old) in enumerate(zip(result, expected)):
            if new is None:
                continue
            if old is None:
                raise InvalidValueError(
                    f"{where} a value for {what}[{j}], where no gradient flows (that argument is not a "
                    "differentiated float array); return None there"
                )
            if not isinstance(new, (np.ndarray, np.generic, Tracer)):
                raise InvalidOutputError(f"{where} {type(new).__name__} as {what}[{j}]; return an array")
            if np.shape(new) != np.shape(old) or np.dtype(new.dtype) != np.dtype(old.dtype):
                raise InvalidValueError(
                    f"{where} {what}[{j}] of shape {np.shape(new)} and dtype {np.dtype(new.dtype)}; it must "
                    f"keep the shape {np.shape(old)} and dtype {np.dtype(old.dtype)} of the one it replaces"
                )
        return tuple(result)


def _readonly(value: Any) -> Any:
    """A read-only view for a hook (torch: hooks must not modify their arguments): a cotangent may be
    the very array the backward pass hands on elsewhere, so a write in place would change another
    gradient; here it raises instead."""
    if isinstance(value, np.ndarray):
        value = value.view()
        value.flags.writeable = False
    return value


def _cotangents(pullback: Callable | None, primals: tuple, g: Any) -> list:
    """One cotangent per primal, in its dtype (zeros where none flows)."""
    found = [None] * len(primals) if pullback is None else pullback(g)
    out = []
    for ct, x in zip(found, primals):
        if ct is None:
            ct = np.zeros(np.shape(x), x.dtype)
        elif ct.dtype != x.dtype:
            ct = ops.astype(ct, dtype=x.dtype)
        out.append(ct)
    return out


def _is_layout(entry: Any) -> bool:
    return type(entry) is tuple and len(entry) == 2 and isinstance(entry[1], np.dtype)


def _body(call: _Call, values: list) -> Any:
    return call.body(values)


def _fwd(call: _Call, values: list) -> tuple[Any, Callable]:
    packed, pullback = call.pullback(values)
    return packed, pullback


def _bwd(call: _Call, pullback: Callable, g: Any) -> tuple:
    return (call.backward(pullback, g),)


_hooked = adcore.custom_vjp(_body, nondiff_argnums=(0,))
_hooked.defvjp(_fwd, _bwd)
