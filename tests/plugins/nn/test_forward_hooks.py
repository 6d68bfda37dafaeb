"""Forward pre-hooks and forward hooks: torch's signatures, order, replacement, flags and removal."""

from __future__ import annotations

import numpy as np
import pytest
from adcore_nn import (
    Module,
    Parameter,
    register_module_forward_hook,
    register_module_forward_pre_hook,
)

import adcore
import adcore.numpy as anp
from adcore.errors import InvalidInputError, InvalidValueError


class Scale(Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = Parameter(np.array([2.0]))

    def forward(self, x, shift=0.0):
        return x * self.w + shift


def test_hooks_see_torch_s_arguments_and_run_in_torch_s_order():
    m, calls = Scale(), []
    m.register_forward_pre_hook(lambda mod, args: calls.append(("pre", mod is m, args)))
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: calls.append(("pre_kw", args, dict(kwargs))), with_kwargs=True
    )
    m.register_forward_hook(lambda mod, args, out: calls.append(("hook", args, out.tolist())))
    m.register_forward_hook(
        lambda mod, args, kwargs, out: calls.append(("hook_kw", dict(kwargs))), with_kwargs=True
    )
    m.register_forward_pre_hook(lambda mod, args: calls.append(("first",)), prepend=True)
    with register_module_forward_pre_hook(lambda mod, args: calls.append(("global_pre",))):
        with register_module_forward_hook(lambda mod, args, out: calls.append(("global_hook",))):
            m(np.array([1.0]), shift=1.0)
    assert [c[0] for c in calls] == ["global_pre", "first", "pre", "pre_kw", "global_hook", "hook", "hook_kw"]
    assert calls[2][1] is True and calls[2][2][0].tolist() == [1.0]
    assert calls[3][2] == {"shift": 1.0} and calls[5][2] == [3.0] and calls[6][1] == {"shift": 1.0}
    calls.clear()
    m(np.array([1.0]))
    assert "global_pre" not in [c[0] for c in calls]  # the context managers removed them


def test_replacements_flow_on():
    m = Scale()
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)  # not a tuple: wrapped in one
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"shift": 10.0}), with_kwargs=True)
    handle = m.register_forward_hook(lambda mod, args, out: out * 100)
    assert m(np.array([1.0])).tolist() == [(2 * 2 + 10) * 100]
    handle.remove()
    handle.remove()  # again: nothing
    assert m(np.array([1.0])).tolist() == [14.0]


def test_a_replaced_output_is_what_is_differentiated():
    m = Scale()
    m.register_forward_hook(lambda mod, args, out: out**2)
    g = adcore.grad(lambda mod, x: anp.sum(mod(x)), argnums=(0, 1))(m, np.array([3.0]))
    # (w x)^2: d/dw = 2 w x^2 = 36, d/dx = 2 w^2 x = 24
    np.testing.assert_allclose(g[0].w, [36.0])
    np.testing.assert_allclose(g[1], [24.0])


def test_hooks_fire_inside_derivatives_on_the_rebuilt_model():
    m, seen = Scale(), []
    m.register_forward_hook(lambda mod, args, out: seen.append(type(mod).__name__))
    adcore.grad(lambda mod: anp.sum(mod(np.ones(2))))(m)
    assert seen == ["Scale"]


def test_always_call_hooks_run_when_the_forward_raises():
    class Fails(Module):
        def forward(self, x):
            raise RuntimeError("boom")

    m, seen = Fails(), []
    m.register_forward_hook(lambda mod, args, out: seen.append(("always", out)), always_call=True)
    m.register_forward_hook(lambda mod, args, out: seen.append(("plain", out)))
    with pytest.raises(RuntimeError, match="boom"):
        m(1.0)
    assert seen == [("always", None)]


def test_a_raising_hook_leaves_the_module_usable():
    m = Scale()
    handle = m.register_forward_pre_hook(lambda mod, args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        m(np.array([1.0]))
    handle.remove()
    assert m(np.array([1.0])).tolist() == [2.0]


def test_bad_hooks_are_typed_errors():
    m = Scale()
    with pytest.raises(InvalidInputError, match="Scale.register_forward_hook: a hook must be callable"):
        m.register_forward_hook(3)
    m.register_forward_pre_hook(lambda mod, args, kwargs: args, with_kwargs=True)
    with pytest.raises(
        InvalidValueError, match=r"with_kwargs=True must return None or a tuple \(args, kwargs\)"
    ):
        m(np.array([1.0]))


def test_the_order_and_arguments_match_torch_s():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written orders above still run"
    )

    def record(log, tag):
        return {
            "pre": lambda mod, args: log.append((tag, "pre", len(args))),
            "pre_kw": lambda mod, args, kwargs: log.append((tag, "pre_kw", sorted(kwargs))),
            "hook": lambda mod, args, out: log.append((tag, "hook", len(args))),
            "first": lambda mod, args, out: log.append((tag, "first", len(args))),
        }

    class TorchScale(torch.nn.Module):
        def forward(self, x, shift=0.0):
            return x * 2 + shift

    logs = []
    for module, register_pre, register_hook in (
        (Scale(), register_module_forward_pre_hook, register_module_forward_hook),
        (
            TorchScale(),
            torch.nn.modules.module.register_module_forward_pre_hook,
            torch.nn.modules.module.register_module_forward_hook,
        ),
    ):
        log = []
        hooks = record(log, "m")
        handles = [
            module.register_forward_pre_hook(hooks["pre"]),
            module.register_forward_pre_hook(hooks["pre_kw"], with_kwargs=True),
            module.register_forward_hook(hooks["hook"]),
            module.register_forward_hook(hooks["first"], prepend=True),
            register_pre(record(log, "global")["pre"]),
            register_hook(record(log, "global")["hook"]),
        ]
        module(np.ones(1) if isinstance(module, Scale) else torch.ones(1), shift=1.0)
        for h in handles:
            h.remove()
        logs.append(log)
    assert logs[0] == logs[1]


def _always_call_log(module, raise_in: str, args_of) -> list:
    """What always_call hooks see when a pre-hook, the forward or a forward hook raises."""
    log = []

    def pre(mod, args):
        if raise_in == "pre":
            raise RuntimeError("pre")
        return (args[0] * 10,)  # a replacement the always_call hooks then see

    def hook(mod, args, out):
        log.append(("hook", args_of(args), out is None))
        if raise_in == "hook":
            raise RuntimeError("hook")

    def always(mod, args, out):
        log.append(("always", args_of(args), out is None))

    def always_raising(mod, args, out):
        log.append(("always_raising", args_of(args)))
        raise ValueError("also broken")

    handles = [
        module.register_forward_pre_hook(pre),
        module.register_forward_hook(hook),
        module.register_forward_hook(always_raising, always_call=True),
        module.register_forward_hook(always, always_call=True),
    ]
    return log, handles


@pytest.mark.parametrize("raise_in", ["pre", "forward", "hook"])
def test_always_call_hooks_run_once_when_any_part_of_the_call_raises(raise_in):
    calls = []

    class Maybe(Scale):
        def forward(self, x, shift=0.0):
            calls.append(x)
            if raise_in == "forward" and len(calls) == 1:
                raise RuntimeError("forward")
            return super().forward(x, shift)

    m = Maybe()
    log, handles = _always_call_log(m, raise_in, lambda args: float(args[0][0]))
    with pytest.warns(RuntimeWarning, match="always_call=True raised ValueError"):
        with pytest.raises(RuntimeError, match=raise_in):  # the call's own error, not the hook's
            m(np.array([1.0]))
    want = {
        "pre": [("always_raising", 1.0), ("always", 1.0, True)],  # the args as given, no output yet
        "forward": [("always_raising", 10.0), ("always", 10.0, True)],  # the pre-hook's args
        # the hook before the raising one ran; the always_call ones not yet run see the output
        "hook": [("hook", 10.0, False), ("always_raising", 10.0), ("always", 10.0, False)],
    }[raise_in]
    assert log == want
    for h in handles:
        h.remove()
    assert m(np.array([1.0])).tolist() == [2.0]  # the module is usable after the error


@pytest.mark.parametrize("raise_in", ["pre", "forward", "hook"])
def test_always_call_on_errors_matches_torch_s(raise_in):
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the hand-written expectations above still run"
    )

    def make(base):
        class Maybe(base):
            def forward(self, x, shift=0.0):
                if raise_in == "forward":
                    raise RuntimeError("forward")
                return x * 2 + shift

        return Maybe()

    logs = []
    for module, x in ((make(Scale), np.array([1.0])), (make(torch.nn.Module), torch.ones(1))):
        log, _ = _always_call_log(module, raise_in, lambda args: float(args[0][0]))
        with pytest.warns(Warning), pytest.raises(RuntimeError, match=raise_in):
            module(x)
        logs.append(log)
    assert logs[0] == logs[1]
