"""The reverse backend: trace f on Tensors once, then sweep backwards once per cotangent."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from adcore.backend import Backend
from adcore.core import new_trace
from adcore.hookspecs import RuleKind
from adcore_reverse.backward import backward_pass
from adcore_reverse.tensor import ReverseTrace, Tensor

# The contract of the "vjp" rules this plugin brings: the cotangent of the output and the output,
# then the op's inputs -> the cotangent of this input (one rule per input, None where none flows).
VJP = RuleKind(
    ("g", "ans"),
    per_input=True,
    column=0,
    doc="(g, ans, *inputs) -> this input's cotangent",
    joint="(g, ans, *inputs) -> a cotangent per input (None where none flows)",
)


class ReverseBackend(Backend):
    """Reverse mode (a tape): f traced once, then one backward sweep per cotangent, so best for
    scalar losses (adcore.derivatives builds a Jacobian from one sweep per output element)."""

    name = "reverse"
    kinds = ("vjp",)
    rule_kinds = {"vjp": VJP}  # the contract of the kind it brings, as data
    builds = "vjp"
    reference_priority = 20  # after symbolic's independent derivation; before forward
    outer_priority = 1  # can differentiate a derivative again, after forward
    batches = True  # its sweep runs on a batched cotangent: a Jacobian's rows in one vmapped sweep

    def vjp(self, f: Callable[..., Any], args: tuple, argnums: Sequence[int]) -> tuple[Any, Any]:
        """f(*args) and its pullback (None when the output does not depend on args[argnums]).

        The pullback never converts its cotangent: a traced one (an outer transformation's)
        flows through the rules, which are written with adcore ops, so it is differentiable."""
        with new_trace(ReverseTrace) as trace:
            inputs = list(args)
            leaves = []
            for i in argnums:
                inputs[i] = Tensor._leaf(args[i], trace)
                leaves.append(inputs[i])
            out = f(*inputs)
        if not (isinstance(out, Tensor) and out._trace is trace):
            return out, None
        if not out.requires_grad:
            return out.value, None

        def pullback(cotangent: Any, final: bool = False) -> tuple:
            reached = {leaf._seq: g for leaf, g in backward_pass(out, cotangent, retain_graph=not final)}
            return tuple([reached.get(leaf._seq) for leaf in leaves])

        return out.value, pullback
