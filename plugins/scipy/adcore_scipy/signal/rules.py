"""The scipy.signal ops' rules, side by side: JVPS (forward), VJPS (reverse), SYMPY_RULES (symbolic).

The rule forms are those of the core tables (adcore_forward.jvps, adcore_reverse.vjps,
adcore_symbolic.sympy_rules): one rule per input of the op, None where no derivative flows.
"""

from __future__ import annotations

from typing import Any

JVPS: dict[str, Any] = {}
VJPS: dict[str, Any] = {}
SYMPY_RULES: dict[str, Any] = {}
