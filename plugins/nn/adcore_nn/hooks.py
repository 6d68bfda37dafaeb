"""Hook handles and the global module hooks (torch.utils.hooks.RemovableHandle, torch's
`register_module_*_hook` functions): a global hook fires for every module call, before the
module's own hooks of the same kind."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from adcore.errors import InvalidInputError

_ids = itertools.count()

# The global registries (id -> hook), read by Module.__call__ and adcore_nn.backward_hooks.
_global_forward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict[int, bool] = OrderedDict()
_global_forward_hooks_always_called: OrderedDict[int, bool] = OrderedDict()
_global_backward_pre_hooks: OrderedDict[int, Callable] = OrderedDict()
_global_backward_hooks: OrderedDict[int, Callable] = OrderedDict()


class RemovableHandle:
    """What registering a hook returns: `.remove()` takes the hook out (again is a no-op); also a
    context manager that removes it on exit. `.id` is the hook's key in its registry."""

    def __init__(self, hooks: OrderedDict, *extra: OrderedDict) -> None:
        self.id = next(_ids)
        self._dicts = (hooks, *extra)

    def remove(self) -> None:
        for registry in self._dicts:
            registry.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()


def add_hook(
    where: str, hook: Any, hooks: OrderedDict, *extra: OrderedDict | None, prepend: bool = False
) -> RemovableHandle:
    """Put `hook` into `hooks` (first with prepend) and mark it in each given `extra` registry (its
    flags: with_kwargs, always_call; None: the flag is off)."""
    if not callable(hook):
        raise InvalidInputError(f"{where}: a hook must be callable, got {type(hook).__name__}")
    flags = [registry for registry in extra if registry is not None]
    handle = RemovableHandle(hooks, *flags)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for registry in flags:
        registry[handle.id] = True
    return handle


def register_module_forward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, args) -> None | args, before every module's forward (and its own pre-hooks)."""
    return add_hook("register_module_forward_pre_hook", hook, _global_forward_pre_hooks)


def register_module_forward_hook(
    hook: Callable[..., Any], *, with_kwargs: bool = False, always_call: bool = False
) -> RemovableHandle:
    """hook(module, args, output) -> None | output (with_kwargs: hook(module, args, kwargs, output)),
    after every module's forward; always_call: also when the forward raised."""
    return add_hook(
        "register_module_forward_hook",
        hook,
        _global_forward_hooks,
        _global_forward_hooks_with_kwargs if with_kwargs else None,
        _global_forward_hooks_always_called if always_call else None,
    )


def register_module_full_backward_pre_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_output) -> None | grad_output, in the backward of every module call."""
    return add_hook("register_module_full_backward_pre_hook", hook, _global_backward_pre_hooks)


def register_module_full_backward_hook(hook: Callable[..., Any]) -> RemovableHandle:
    """hook(module, grad_input, grad_output) -> None | grad_input, in the backward of every module call."""
    return add_hook("register_module_full_backward_hook", hook, _global_backward_hooks)


def any_global_hooks() -> bool:
    return bool(
        _global_forward_pre_hooks
        or _global_forward_hooks
        or _global_backward_pre_hooks
        or _global_backward_hooks
    )
