"""What the reverse emitter knows about the adjoints at one point of the adjoint sweep."""

from __future__ import annotations

from dataclasses import dataclass, field

SOME, MAYBE = "some", "maybe"  # holds an adjoint; holds one or None (zero). Absent: known zero.


@dataclass
class AdjointState:
    """`kinds`: name -> SOME or MAYBE for the names whose adjoint variable is live (the others' adjoint
    is zero and has no variable); `owned`: those whose adjoint no other name holds (written into in
    place); `masked`: those whose adjoint may carry structural zeros (runtime.Masked)."""

    kinds: dict[str, str] = field(default_factory=dict)
    owned: set[str] = field(default_factory=set)
    masked: set[str] = field(default_factory=set)

    def copy(self) -> AdjointState:
        return AdjointState(dict(self.kinds), set(self.owned), set(self.masked))

    def replace(self, other: AdjointState) -> None:
        self.kinds, self.owned, self.masked = dict(other.kinds), set(other.owned), set(other.masked)

    def set(self, name: str, kind: str, *, owned: bool, masked: bool) -> None:
        self.kinds[name] = kind
        (self.owned.add if owned else self.owned.discard)(name)
        (self.masked.add if masked else self.masked.discard)(name)

    def zero(self, name: str) -> None:
        self.kinds.pop(name, None)
        self.owned.discard(name)
        self.masked.discard(name)

    def same(self, other: AdjointState) -> bool:
        return self.kinds == other.kinds and self.owned == other.owned and self.masked == other.masked


def joined(a: AdjointState, b: AdjointState) -> AdjointState:
    """Where two paths meet: SOME on both stays SOME; live on one only, or MAYBE on one, is MAYBE
    (the path where it is zero sets it to None, `materialised`); owned only where owned (or zero, None
    being nobody's) on both; masked where masked on either."""
    out = AdjointState()
    for name in a.kinds.keys() | b.kinds.keys():
        kind = SOME if a.kinds.get(name) == SOME and b.kinds.get(name) == SOME else MAYBE
        owned = all(name in s.owned or name not in s.kinds for s in (a, b))
        out.set(name, kind, owned=owned, masked=name in a.masked or name in b.masked)
    return out


def materialised(before: AdjointState, after: AdjointState) -> list[str]:
    """The names live in `after` (a join) but zero in `before`: set to None on that path."""
    return sorted(n for n in after.kinds if n not in before.kinds)
