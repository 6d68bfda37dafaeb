"""Module: torch.nn.Module's surface over plain NumPy arrays, and a pytree of its parameters.

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.fc = Linear(4, 2)                      # a submodule
            self.scale = Parameter(np.ones(2, np.float32))  # a parameter: a plain float array
            self.register_buffer("seen", np.zeros(1))   # state that is not differentiated

        def forward(self, x):
            return self.fc(x) * self.scale

    grads = adcore.grad(lambda m: anp.sum(m(x)))(model)   # a model-shaped gradient: grads.fc.weight

A module is a pytree whose leaves are its parameters (its own, in registration order, then its
submodules'); buffers, hooks and the training flag ride along in the rebuilt module, shared with
the original (so hooks registered on `model` fire when a derivative calls the rebuilt copy, and a
running statistic updated in a traced forward lands in `model`'s buffer, as in torch). Two modules
have one pytree structure when they are one model in one state (the model, its gradient, its rebuilt
copies; not another model of the same class, nor the model after eval() or an attribute change), so
a derivative cached for one never runs another with stale attributes. A parameter held under two
names (tied weights) is refused as a pytree: differentiate dict(model.named_parameters()) through
functional_call instead, which gives torch's one gradient per array.
Where adcore differs from torch: `model.weight` is the np.ndarray itself (never a subclass, so
values are NumPy's bit for bit); gradients are returned, not stored (no `.grad`, `zero_grad`,
`requires_grad_`); `state_dict()` returns copies. As in torch, a plain array assigned to a new
attribute is neither a parameter nor a buffer: not differentiated, not in state_dict (wrap it in
Parameter, or register_buffer it). train()/eval() inside a derivative (on the rebuilt copy) that
would change the mode is an error (the user's model would keep its old mode): call them before.
A traced value assigned over a concrete buffer is an error (it would stay in the model): assign
adcore.concrete(value). Backends that evaluate f several times for one derivative (numeric's
finite differences) run forward and the forward hooks once per evaluation: a hook or forward
that records or counts sees every evaluation (BatchNorm and Dropout refuse there by name).
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np

import adcore
from adcore.core import Tracer
from adcore.errors import InvalidInputError, InvalidValueError, UnsupportedFunctionError
from adcore_nn import hooks as global_hooks
from adcore_nn.hooks import RemovableHandle, add_hook

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_LEAF_DICTS = ("_parameters", "_modules")  # what a rebuilt copy holds anew: the pytree's children


class Parameter:
    """Marks an array as a parameter when assigned to a module attribute:
    `self.weight = Parameter(np.zeros((2, 3), np.float32))`. The module keeps the array itself."""

    __slots__ = ("data",)

    def __init__(self, data: Any, requires_grad: bool = True) -> None:
        if requires_grad is not True:
            # a frozen parameter would still get a gradient and an optimizer over the model's pytree
            # would update it: a silent difference from torch
            raise InvalidValueError(
                "Parameter(requires_grad=False): adcore differentiates every parameter of a module; "
                "register a frozen array with register_buffer(name, array) instead (buffers are not "
                "differentiated), or apply adcore.stop_gradient to it in forward"
            )
        self.data = data


class _IncompatibleKeys(NamedTuple):
    missing_keys: list[str]
    unexpected_keys: list[str]


class _Skeleton:
    """A module's pytree node data: the module to rebuild from, equal to another skeleton when the
    class and the parameter and submodule names are, of the same model or its rebuilt copies (the
    gradient of a model has its structure; another model of the same architecture has not)."""

    __slots__ = ("key", "module")

    def __init__(self, module: Module) -> None:
        self.module = module
        self.key = (type(module), tuple(module._parameters), tuple(module._modules))

    def __eq__(self, other: object) -> bool:
        # and the same model in the same state: adcore caches a function's flat form by its arguments'
        # structure and rebuilds later calls from the cached skeleton's module, so every attribute
        # but the leaves (hooks, buffers, the training flag, settings) must be the same objects, or a
        # call would run with another model's, or a stale copy's (training after model.eval()). A
        # model's rebuilt copies (its gradient too) hold its attributes, so they stay equal to it.
        if not (isinstance(other, _Skeleton) and self.key == other.key):
            return False
        mine, theirs = self.module.__dict__, other.module.__dict__
        return mine.keys() == theirs.keys() and all(
            value is theirs[name] for name, value in mine.items() if name not in _LEAF_DICTS
        )

    def __hash__(self) -> int:
        return hash(self.key)

    def __repr__(self) -> str:
        # the training flag and which model (its hook dicts' id, shared by its copies): what tells two
        # skeletons of one class apart in a structure-mismatch message
        return (
            f"{self.key[0].__name__}(parameters={list(self.key[1])}, modules={list(self.key[2])}, "
            f"training={self.module.training}, model=0x{id(self.module._forward_hooks):x})"
        )


def _flatten(module: Module) -> tuple:
    _refuse_tied(module)
    names = (*module._parameters, *module._modules)
    return (*module._parameters.values(), *module._modules.values()), _Skeleton(module), names


def _refuse_tied(module: Module) -> None:
    """A parameter held under two names (tied weights, a shared submodule) would be two leaves, each
    with its own partial gradient where torch gives the array one (their sum): refused."""
    seen: dict[int, str] = {}
    queue, k = [("", module)], 0
    while k < len(queue):  # every node checks its subtree (it may be a root): a plain walk, no generators
        prefix, node = queue[k]
        k += 1
        for own, value in node._parameters.items():
            if value is None:
                continue
            name = prefix + own
            first = seen.setdefault(id(value), name)
            if first == name:
                continue
            raise InvalidValueError(
                f"{module._get_name()}: parameters {first!r} and {name!r} are one array (tied weights or a "
                "shared submodule); as a pytree each name would be its own leaf with its own partial "
                "gradient, not torch's one gradient of the array. Differentiate a dict of the parameters "
                "instead, adcore.grad(lambda p: loss(adcore_nn.functional_call(model, p, x)))"
                "(dict(model.named_parameters())) (tied names share one entry), or hold the array in one "
                "module and use it from the other's forward"
            )
        queue += [(f"{prefix}{name}.", child) for name, child in node._modules.items() if child is not None]


def _unflatten(skeleton: _Skeleton, children: Any) -> Module:
    return skeleton.module._rebuilt(list(children))


def _checked_parameter(owner: Module, name: str, value: Any) -> Any:
    """value as a parameter of `owner`: None, a tracer (a derivative's), or a float32/float64 array."""
    if value is None or isinstance(value, Tracer):
        return value
    if isinstance(value, Parameter):
        value = value.data
    if not isinstance(value, np.ndarray) or value.dtype not in FLOATS:
        what = f"a {value.dtype} array" if isinstance(value, np.ndarray) else type(value).__name__
        raise InvalidInputError(
            f"{owner._get_name()}: parameter {name!r} must be a float32 or float64 NumPy array, got {what}"
        )
    return value


def _checked_buffer(owner: Module, name: str, value: Any) -> Any:
    """value as buffer `name`'s new value: a traced value may not replace a concrete array."""
    if isinstance(value, Tracer) and isinstance(owner._buffers.get(name), np.ndarray):
        # a derivative's rebuilt copy shares the model's buffers: the tracer would outlive the
        # derivative in the user's model (torch updates such state under no_grad)
        raise InvalidValueError(
            f"{owner._get_name()}: buffer {name!r} was assigned a traced value (it depends on what is "
            "being differentiated) and would keep it in your model after the derivative; assign "
            "adcore.concrete(value) (state updated without a derivative, as torch's no_grad), or pass the "
            "buffer to functional_call to differentiate it"
        )
    return value


class Module:
    """The base class of every layer and model, with torch.nn.Module's surface (see the module doc)."""

    training: bool
    _parameters: dict[str, Any]
    _buffers: dict[str, Any]
    _modules: dict[str, Module | None]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        adcore.tree.register(cls, _flatten, _unflatten)

    def __init__(self) -> None:
        setattr_ = object.__setattr__
        setattr_(self, "training", True)
        setattr_(self, "_parameters", {})
        setattr_(self, "_buffers", {})
        setattr_(self, "_non_persistent_buffers_set", set())
        setattr_(self, "_modules", {})
        for name in (
            "_forward_pre_hooks",
            "_forward_pre_hooks_with_kwargs",
            "_forward_hooks",
            "_forward_hooks_with_kwargs",
            "_forward_hooks_always_called",
            "_backward_pre_hooks",
            "_backward_hooks",
        ):
            setattr_(self, name, OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f'Module [{self._get_name()}] is missing the required "forward" function')

    # -- calling, with torch's hook order ------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if not (
            self._forward_pre_hooks
            or self._forward_hooks
            or self._backward_pre_hooks
            or self._backward_hooks
            or global_hooks.any_global_hooks()
        ):
            return self.forward(*args, **kwargs)
        return self._call_with_hooks(args, kwargs)

    def _call_with_hooks(self, args: tuple, kwargs: dict) -> Any:
        call = _HookedCall(self, args, kwargs)
        try:
            self._run_pre_hooks(call)
            if (
                self._backward_pre_hooks
                or self._backward_hooks
                or global_hooks._global_backward_pre_hooks
                or global_hooks._global_backward_hooks
            ):
                from adcore_nn.backward_hooks import call_with_backward_hooks  # it imports this module

                return call_with_backward_hooks(self, call.args, call.kwargs, forward=call.forward_then_hooks)
            return call.forward_then_hooks(self, *call.args, **call.kwargs)
        except Exception:
            call.run_always_called()  # torch's: also when a pre-hook or a forward hook raised
            raise

    def _run_pre_hooks(self, call: _HookedCall) -> None:
        """The global then the module's forward pre-hooks, each replacing call.args (and call.kwargs)."""
        with_kwargs = self._forward_pre_hooks_with_kwargs
        for hook_id, hook in (
            *global_hooks._global_forward_pre_hooks.items(),
            *self._forward_pre_hooks.items(),
        ):
            if hook_id in with_kwargs:
                result = hook(self, call.args, call.kwargs)
                if result is None:
                    continue
                if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict)):
                    raise InvalidValueError(
                        f"{self._get_name()}: forward pre-hook {_hook_name(hook)} registered with_kwargs=True "
                        f"must return None or a tuple (args, kwargs), got {type(result).__name__}"
                    )
                args, call.kwargs = result
                call.args = args if isinstance(args, tuple) else (args,)
            else:
                result = hook(self, call.args)
                if result is not None:
                    call.args = result if isinstance(result, tuple) else (result,)

    # -- registration --------------------------------------------------------------------------

    def __setattr__(self, name: str, value: Any) -> None:
        if "_parameters" not in self.__dict__ and isinstance(value, Parameter | Module):
            raise InvalidValueError(
                f"{type(self).__name__}: cannot assign {name!r} before Module.__init__() is called: "
                "call super().__init__() first in your __init__"
            )
        if isinstance(value, Parameter):
            self._forget(name)
            self.register_parameter(name, value)
        elif name in self.__dict__.get("_parameters", ()):
            self._parameters[name] = _checked_parameter(self, name, value)
        elif isinstance(value, Module):
            self._forget(name)
            self._modules[name] = value
        elif name in self.__dict__.get("_modules", ()):
            if value is not None:
                raise InvalidInputError(
                    f"{self._get_name()}: cannot assign a {type(value).__name__} as child module {name!r} "
                    "(a Module or None expected)"
                )
            self._modules[name] = None
        elif name in self.__dict__.get("_buffers", ()):
            if value is not None and not isinstance(value, np.ndarray | Tracer):
                raise InvalidInputError(
                    f"{self._get_name()}: cannot assign a {type(value).__name__} as buffer {name!r} "
                    "(an array or None expected)"
                )
            self._buffers[name] = _checked_buffer(self, name, value)
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name: str) -> Any:
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self._parameters, *self._buffers, *self._modules})

    def _forget(self, name: str) -> None:
        """Take `name` out of every registry and the instance dict, before it is registered anew."""
        self.__dict__.pop(name, None)
        for registry in (self._parameters, self._buffers, self._modules):
            registry.pop(name, None)
        self._non_persistent_buffers_set.discard(name)

    def _check_name(self, what: str, name: Any) -> None:
        if "_parameters" not in self.__dict__:
            raise InvalidValueError(f"{type(self).__name__}: call super().__init__() before {what}")
        if not isinstance(name, str):
            raise InvalidInputError(
                f"{self._get_name()}.{what}: the name must be a str, got {type(name).__name__}"
            )
        if not name or "." in name:
            raise InvalidValueError(
                f"{self._get_name()}.{what}: the name must be non-empty without '.', got {name!r}"
            )
        taken = name in self.__dict__ and name not in (*self._parameters, *self._buffers, *self._modules)
        # a class attribute, a property too (torch's rule): it would shadow the registered array, so
        # self.name would silently read the class's value
        if taken or hasattr(type(self), name):
            raise InvalidValueError(f"{self._get_name()}.{what}: attribute {name!r} already exists")

    def register_parameter(self, name: str, param: Any) -> None:
        """Add a parameter (a float array, or None for an absent one such as bias=False)."""
        if name not in self._parameters:
            self._check_name("register_parameter", name)
        self._parameters[name] = _checked_parameter(self, name, param)

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Add a buffer: an array (any dtype) that is state, not a parameter; in state_dict unless
        persistent=False."""
        if name not in self._buffers:
            self._check_name("register_buffer", name)
        if tensor is not None and not isinstance(tensor, np.ndarray | Tracer):
            raise InvalidInputError(
                f"{self._get_name()}.register_buffer: buffer {name!r} must be an array or None, got "
                f"{type(tensor).__name__}"
            )
        self._buffers[name] = _checked_buffer(self, name, tensor)
        (self._non_persistent_buffers_set.discard if persistent else self._non_persistent_buffers_set.add)(
            name
        )

    def add_module(self, name: str, module: Module | None) -> None:
        if not isinstance(module, Module | None):
            raise InvalidInputError(f"{self._get_name()}.add_module: {type(module).__name__} is not a Module")
        if name not in self._modules:
            self._check_name("add_module", name)
        self._modules[name] = module

    register_module = add_module

    # -- hooks ---------------------------------------------------------------------------------

    def register_forward_pre_hook(
        self, hook: Callable[..., Any], *, prepend: bool = False, with_kwargs: bool = False
    ) -> RemovableHandle:
        """hook(module, args) -> None | args (with_kwargs: hook(module, args, kwargs) -> None | (args, kwargs))."""
        flags = self._forward_pre_hooks_with_kwargs if with_kwargs else None
        return add_hook(
            self._where("register_forward_pre_hook"), hook, self._forward_pre_hooks, flags, prepend=prepend
        )

    def register_forward_hook(
        self,
        hook: Callable[..., Any],
        *,
        prepend: bool = False,
        with_kwargs: bool = False,
        always_call: bool = False,
    ) -> RemovableHandle:
        """hook(module, args, output) -> None | output (with_kwargs: hook(module, args, kwargs, output));
        always_call: also when the forward raised."""
        return add_hook(
            self._where("register_forward_hook"),
            hook,
            self._forward_hooks,
            self._forward_hooks_with_kwargs if with_kwargs else None,
            self._forward_hooks_always_called if always_call else None,
            prepend=prepend,
        )

    def register_full_backward_pre_hook(
        self, hook: Callable[..., Any], prepend: bool = False
    ) -> RemovableHandle:
        """hook(module, grad_output) -> None | grad_output, before the module's input gradients are computed."""
        where = self._where("register_full_backward_pre_hook")
        return add_hook(where, hook, self._backward_pre_hooks, prepend=prepend)

    def register_full_backward_hook(self, hook: Callable[..., Any], prepend: bool = False) -> RemovableHandle:
        """hook(module, grad_input, grad_output) -> None | grad_input; grad_input is the gradient of the
        module's own positional inputs (adcore_nn.backward_hooks)."""
        where = self._where("register_full_backward_hook")
        return add_hook(where, hook, self._backward_hooks, prepend=prepend)

    def register_backward_hook(self, hook: Callable[..., Any]) -> RemovableHandle:
        raise UnsupportedFunctionError(
            f"{self._get_name()}.register_backward_hook: torch's deprecated hook reported the gradients of "
            "the module's last operation instead of its inputs (pytorch#598); adcore does not reproduce "
            "that. Use register_full_backward_hook(hook(module, grad_input, grad_output)) instead."
        )

    def _where(self, method: str) -> str:
        return f"{self._get_name()}.{method}"

    # -- walking the tree ----------------------------------------------------------------------

    def named_modules(
        self, memo: set | None = None, prefix: str = "", remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(
                    memo, f"{prefix}.{name}" if prefix else name, remove_duplicate
                )

    def modules(self) -> Iterator[Module]:
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, module in self.named_children():
            yield module

    def _named_members(
        self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool
    ) -> Iterator[tuple[str, Any]]:
        modules = (
            self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate)
            if recurse
            else [(prefix, self)]
        )
        seen: set[int] = set()
        for module_prefix, module in modules:
            for name, value in getattr(module, registry).items():
                if value is None or (remove_duplicate and id(value) in seen):
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Any]]:
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(
        self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True
    ) -> Iterator[tuple[str, Any]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        for _, buffer in self.named_buffers(recurse=recurse):
            yield buffer

    def get_submodule(self, target: str) -> Module:
        module: Module = self
        for item in target.split(".") if target else []:
            child = module._modules.get(item)
            if child is None:
                raise InvalidValueError(
                    f"{module._get_name()} has no submodule {item!r} (looking up {target!r})"
                )
            module = child
        return module

    def get_parameter(self, target: str) -> Any:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._parameters:
            raise InvalidValueError(f"{module._get_name()} has no parameter {name!r} (looking up {target!r})")
        return module._parameters[name]

    def get_buffer(self, target: str) -> Any:
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        if name not in module._buffers:
            raise InvalidValueError(f"{module._get_name()} has no buffer {name!r} (looking up {target!r})")
        return module._buffers[name]

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """fn(m) for every submodule, children first, then this module (torch's order)."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise InvalidInputError(
                f"{self._get_name()}.train: mode must be a bool, got {type(mode).__name__}"
            )
        modules = list(self.modules())
        if any(m.training != mode for m in modules) and any(
            isinstance(p, Tracer) for m in modules for p in m._parameters.values()
        ):
            # a derivative calls a rebuilt copy of the model: the copy's mode would change and the
            # user's model would silently keep its old one (Dropout still on in a later evaluation)
            raise InvalidValueError(
                f"{self._get_name()}.{'train()' if mode else 'eval()'} inside a derivative (adcore.grad, "
                "functional_call under a transformation, ...): the model being differentiated is a rebuilt "
                "copy, so the change would not reach your model. Call model.train()/model.eval() before "
                "the call instead"
            )
        for module in modules:
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def float(self) -> Module:
        """Cast every parameter and floating buffer to float32, as torch's .float().

        Where adcore differs: a NumPy array cannot change dtype in place, so each array whose dtype
        changes is a new one and an optimizer made before over model.parameters() keeps updating
        the old arrays; cast first, then make the optimizer (torch's advice for .cuda())."""
        return self._cast(np.float32)

    def double(self) -> Module:
        """Cast every parameter and floating buffer to float64 (new arrays: see float())."""
        return self._cast(np.float64)

    def type(self, dst_type: Any) -> Module:
        """Cast every parameter and buffer to dst_type (float32 or float64), as torch's .type(): integer
        buffers too (torch's num_batches_tracked becomes a float there as well)."""
        dtype = np.dtype(dst_type)
        if dtype not in FLOATS:
            raise InvalidValueError(
                f"{self._get_name()}.type: parameters are float32 or float64 arrays, got {dtype}"
            )
        return self._cast(dtype, every_buffer=True)

    def _cast(self, dtype: Any, every_buffer: bool = False) -> Module:
        cast: dict[int, Any] = {}  # one new array per old one, so tied parameters stay tied

        def new(value: Any) -> Any:
            if id(value) not in cast:
                cast[id(value)] = value.astype(dtype, copy=False)
            return cast[id(value)]

        for module in self.modules():
            for name, value in module._parameters.items():
                if isinstance(value, np.ndarray):
                    module._parameters[name] = new(value)
            for name, value in module._buffers.items():
                if isinstance(value, np.ndarray) and (every_buffer or value.dtype in FLOATS):
                    module._buffers[name] = new(value)
        return self

    # -- state dicts ---------------------------------------------------------------------------

    def state_dict(
        self, *, destination: dict | None = None, prefix: str = "", keep_vars: bool = False
    ) -> OrderedDict[str, Any]:
        """Parameters and persistent buffers under torch's keys ("features.0.weight"), as copies
        (keep_vars=True: the arrays themselves)."""
        out = OrderedDict() if destination is None else destination
        # every name of a shared submodule or parameter, as torch lists them (a tied model's state
        # dict from torch has them all)
        for module_prefix, module in self.named_modules(prefix=prefix.rstrip("."), remove_duplicate=False):
            dot = f"{module_prefix}." if module_prefix else ""
            entries = [*module._parameters.items()]
            entries += [
                (k, v) for k, v in module._buffers.items() if k not in module._non_persistent_buffers_set
            ]
            for name, value in entries:
                if value is not None:
                    out[dot + name] = value if keep_vars else np.array(value, copy=True)
        return out

    def load_state_dict(
        self, state_dict: Any, strict: bool = True, assign: bool = False
    ) -> _IncompatibleKeys:
        """Copy a state dict's arrays (torch's keys; a torch state dict converted with .numpy()) into
        the parameters and buffers in place, cast to their dtypes (assign=True: take the arrays, as
        copies). Every key and shape is checked before anything is changed."""
        me = f"{self._get_name()}.load_state_dict"
        if not hasattr(state_dict, "keys"):
            raise InvalidInputError(f"{me}: expected a dict of arrays, got {type(state_dict).__name__}")
        targets = self._state_targets()
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        if strict and (missing or unexpected):
            raise InvalidValueError(
                f"{me}: the state dict does not match the module: missing keys {missing}, unexpected keys "
                f"{unexpected}; pass strict=False to load the matching keys only. Nothing was changed."
            )
        loads = []
        for key in (k for k in targets if k in state_dict):
            module, registry, name = targets[key]
            current, value = getattr(module, registry)[name], np.asarray(state_dict[key])
            if current.shape != value.shape:
                raise InvalidValueError(
                    f"{me}: size mismatch for {key}: the state dict has shape {value.shape}, the module "
                    f"{current.shape}. Nothing was changed."
                )
            if not assign and not current.flags.writeable:
                # found before any copy, so a read-only array cannot leave a half-loaded model
                raise InvalidValueError(
                    f"{me}: {key} is a read-only array and cannot be loaded in place; pass assign=True, "
                    "or make it writeable. Nothing was changed."
                )
            if registry == "_parameters" and assign and value.dtype not in FLOATS:
                raise InvalidInputError(
                    f"{me}: {key} must be float32 or float64 to be assigned, got {value.dtype}"
                )
            loads.append((module, registry, name, current, value))
        # assign: one new array per old one (its last key's value, as the in-place copies leave it),
        # so tied parameters stay tied
        fresh = {id(current): value for _, _, _, current, value in loads} if assign else {}
        fresh = {key: np.array(value, copy=True) for key, value in fresh.items()}
        for module, registry, name, current, value in loads:
            if assign:
                getattr(module, registry)[name] = fresh[id(current)]
            else:
                np.copyto(current, value, casting="unsafe")
        return _IncompatibleKeys(missing, unexpected)

    def _state_targets(self) -> dict[str, tuple[Module, str, str]]:
        targets = {}
        for module_prefix, module in self.named_modules(remove_duplicate=False):
            dot = f"{module_prefix}." if module_prefix else ""
            for name, value in module._parameters.items():
                if value is not None:
                    targets[dot + name] = (module, "_parameters", name)
            for name, value in module._buffers.items():
                if value is not None and name not in module._non_persistent_buffers_set:
                    targets[dot + name] = (module, "_buffers", name)
        return targets

    # -- the pytree ----------------------------------------------------------------------------

    def _rebuilt(self, children: list) -> Module:
        """A shallow copy holding `children` (parameters, then submodules, in order), sharing the rest."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        count = len(self._parameters)
        new.__dict__["_parameters"] = dict(zip(self._parameters, children[:count], strict=True))
        new.__dict__["_modules"] = dict(zip(self._modules, children[count:], strict=True))
        return new

    # -- printing ------------------------------------------------------------------------------

    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr().split("\n") if self.extra_repr() else []
        children = [f"({name}): {_indented(repr(module))}" for name, module in self._modules.items()]
        lines = extra + children
        if len(extra) == 1 and not children:
            return f"{self._get_name()}({extra[0]})"
        body = "\n  " + "\n  ".join(lines) + "\n" if lines else ""
        return f"{self._get_name()}({body})"


adcore.tree.register(Module, _flatten, _unflatten)


class _HookedCall:
    """One module call with hooks: what its hooks have seen so far, so that the always_call forward
    hooks not yet run can run when any part of the call raised (torch's _call_impl)."""

    __slots__ = ("args", "called", "kwargs", "module", "output")

    def __init__(self, module: Module, args: tuple, kwargs: dict) -> None:
        self.module, self.args, self.kwargs = module, args, kwargs
        self.output: Any = None
        self.called: set[int] = set()

    def forward_then_hooks(self, module: Module, *args: Any, **kwargs: Any) -> Any:
        """The forward, then the global and the module's forward hooks (backward_hooks may call it with
        the module rebuilt from traced parameters, which the hooks then see)."""
        self.module, self.args, self.kwargs = module, args, kwargs
        self.output = module.forward(*args, **kwargs)
        always = (global_hooks._global_forward_hooks_always_called, module._forward_hooks_always_called)
        for hook_id, hook in (*global_hooks._global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in always[0] or hook_id in always[1]:
                self.called.add(hook_id)
            result = _run_forward_hook(module, hook_id, hook, args, kwargs, self.output)
            if result is not None:
                self.output = result
        return self.output

    def run_always_called(self) -> None:
        """The always_call forward hooks not run yet, after an error (which the caller re-raises): the
        output they see is None if the forward raised. One that raises too is a warning, as in torch,
        so the original error is the one that propagates."""
        module = self.module
        always = (global_hooks._global_forward_hooks_always_called, module._forward_hooks_always_called)
        for hook_id, hook in (*global_hooks._global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in self.called or not (hook_id in always[0] or hook_id in always[1]):
                continue
            try:
                result = _run_forward_hook(module, hook_id, hook, self.args, self.kwargs, self.output)
            except Exception as e:
                warnings.warn(
                    f"{module._get_name()}: forward hook {_hook_name(hook)} registered with always_call=True "
                    f"raised {type(e).__name__}: {e} while the call was failing; the call's own error follows",
                    RuntimeWarning,
                    stacklevel=4,
                )
                continue
            if result is not None:
                self.output = result


def _run_forward_hook(
    module: Module, hook_id: int, hook: Callable, args: tuple, kwargs: dict, output: Any
) -> Any:
    with_kwargs = (global_hooks._global_forward_hooks_with_kwargs, module._forward_hooks_with_kwargs)
    if any(hook_id in flags for flags in with_kwargs):
        return hook(module, args, kwargs, output)
    return hook(module, args, output)


def _hook_name(hook: Any) -> str:
    return getattr(hook, "__qualname__", type(hook).__name__)


def _indented(text: str) -> str:
    return text.replace("\n", "\n  ")
