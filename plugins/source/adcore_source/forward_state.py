"""What the forward emitter knows about f's locals at one point of the generated code."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class State:
    """`bound`: the names whose tangent variable holds their tangent (the others' tangent is zero);
    `owned`: those of them whose tangent no other name holds (it may be written into in place);
    `defined`: the names assigned on every path here ("yes") or on some ("maybe")."""

    bound: set[str] = field(default_factory=set)
    owned: set[str] = field(default_factory=set)
    defined: dict[str, str] = field(default_factory=dict)

    def copy(self) -> State:
        return State(set(self.bound), set(self.owned), dict(self.defined))

    def replace(self, other: State) -> None:
        self.bound, self.owned, self.defined = set(other.bound), set(other.owned), dict(other.defined)

    def define(self, name: str) -> None:
        self.defined[name] = "yes"

    def bind(self, name: str, *, owned: bool) -> None:
        self.bound.add(name)
        if owned:
            self.owned.add(name)
        else:
            self.owned.discard(name)

    def unbind(self, name: str) -> None:
        self.bound.discard(name)
        self.owned.discard(name)

    def same(self, other: State) -> bool:
        return self.bound == other.bound and self.owned == other.owned and self.defined == other.defined


def joined(a: State, b: State) -> State:
    """The state where two paths meet, once the tangents bound on one path only have been
    materialised (as fresh zeros) on the other, where the name is defined."""
    bound = a.bound | b.bound
    owned = {n for n in bound if (n not in a.bound or n in a.owned) and (n not in b.bound or n in b.owned)}
    defined = {}
    for n in a.defined.keys() | b.defined.keys():
        defined[n] = "yes" if a.defined.get(n) == "yes" and b.defined.get(n) == "yes" else "maybe"
    return State(bound, owned, defined)
