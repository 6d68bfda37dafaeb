"""Check one op's sparsity rule against its Jacobian at the op's own samples, without the
sparsity backend: the rule's pattern, global (traced inputs Unknown) and local (values), must
hold every non-zero of the Jacobian reverse mode computes; an exact rule's local pattern must be
no larger. Shared by the rule tables' tests (tests/plugins/sparsity/rules/)."""

from __future__ import annotations

from typing import Any

import numpy as np
from adcore_sparsity.extend import DENSE, Unknown

import adcore


def dense_pattern(dependency: Any, out_size: int, in_size: int) -> np.ndarray:
    """A rule's entry as a dense bool (out_size, in_size) matrix."""
    if dependency is None:
        return np.zeros((out_size, in_size), dtype=bool)
    if isinstance(dependency, str) and dependency == DENSE:
        return np.ones((out_size, in_size), dtype=bool)
    matrix = dependency.toarray() if hasattr(dependency, "toarray") else np.asarray(dependency)
    assert matrix.shape == (out_size, in_size), f"pattern shape {matrix.shape}, want {(out_size, in_size)}"
    return matrix != 0


def jacobians(op: Any, args: tuple, params: dict) -> list[np.ndarray | None]:
    """d op / d input i as (out.size, input.size) for each float input it differentiates, else None."""
    result = []
    for i, a in enumerate(args):
        if not (op.is_differentiable(i) and np.asarray(a).dtype.kind == "f"):
            result.append(None)
            continue
        j = adcore.jacobian(lambda *xs: op(*xs, **params), argnums=i, backend="reverse")(*args)
        out_size = int(np.size(op.impl(*args, **params)))
        result.append(np.asarray(j).reshape(out_size, np.size(a)))
    return result


def check_rule(op_name: str, args: tuple, params: dict, *, atol: float = 0.0) -> None:
    """Assert the op's registered sparsity rule is a superset of |J| > atol at (args, params),
    globally and locally, local within global, and local == the non-zeros when it claims exact."""
    registry = adcore.plugins.get_registry()
    op, rule = registry.ops[op_name], registry.rules["sparsity"][op_name]
    ans = op.impl(*args, **params)
    floats = [op.is_differentiable(i) and np.asarray(a).dtype.kind == "f" for i, a in enumerate(args)]
    hidden = tuple(Unknown(np.shape(a), np.asarray(a).dtype) if f else a for a, f in zip(args, floats))
    global_deps = rule(Unknown(np.shape(ans), np.asarray(ans).dtype), *hidden, **params)
    local_deps = rule(ans, *args, **params)
    assert len(global_deps) == len(args) and len(local_deps) == len(args), f"{op_name}: one entry per input"
    for i, jac in enumerate(jacobians(op, args, params)):
        if jac is None:
            continue
        nonzero = np.abs(jac) > atol
        where = f"op {op_name!r} input {i} params {params}"
        glob = dense_pattern(global_deps[i], *jac.shape)
        local = dense_pattern(local_deps[i], *jac.shape)
        assert not (nonzero & ~glob).any(), (
            f"{where}: the global pattern misses {np.argwhere(nonzero & ~glob)[:5]}"
        )
        assert not (nonzero & ~local).any(), (
            f"{where}: the local pattern misses {np.argwhere(nonzero & ~local)[:5]}"
        )
        assert not (local & ~glob).any(), f"{where}: the local pattern has entries the global one lacks"
        if rule.exact:
            assert not (local & ~nonzero).any(), (
                f"{where}: the rule claims exact but its local pattern has {np.argwhere(local & ~nonzero)[:5]} "
                "where the Jacobian is 0"
            )


def check_op(op_name: str, dtype: Any = np.float64, seed: int = 0, atol: float = 0.0) -> int:
    """check_rule at every sample the op draws; the number of samples checked."""
    op = adcore.plugins.get_registry().ops[op_name]
    samples = op.samples(np.random.default_rng(seed), np.dtype(dtype)) if op.samples else []
    for sample in samples:
        check_rule(op_name, sample.args, sample.params, atol=atol)
    return len(samples)
