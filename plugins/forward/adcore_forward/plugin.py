"""The forward plugin's hooks: the contract of its rule kind, its JVP table and its backend."""

from __future__ import annotations

from adcore import hookimpl
from adcore.hookspecs import RuleKind
from adcore_forward.backend import ForwardBackend
from adcore_forward.jvps import JVPS

# The contract of the "jvp" rules this plugin brings: the batched tangent of this input and the
# output, then the op's inputs -> this input's share of the output's batched tangent. `t` has shape
# (B,) + input.shape: B tangent directions at once. The share must broadcast to (B,) + ans.shape
# (the backend broadcasts it there). One rule per input, None where none flows.
JVP = RuleKind(("t", "ans"), per_input=True, column=1, doc="(t, ans, *inputs) -> this input's tangent share")

rule_kinds = {"jvp": JVP}  # declared as data: read when the plugin loads


@hookimpl
def adcore_register_rules(register) -> None:
    for op, rule in JVPS.items():
        register("jvp", op, rule)


@hookimpl
def adcore_register_backends(register) -> None:
    register(ForwardBackend())
