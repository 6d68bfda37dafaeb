"""adcore-source: differentiation by source transformation (Tangent's way).

f's Python source is read, normalised to one operation per statement, and written out again as a
forward-mode or reverse-mode derivative module, from the registry's rules; the module may be
compiled with numba. `adcore.grad(f, backend="source", mode="reverse")` uses it through the
backend contract; `derivative_source(f)` shows the generated code.
"""

from adcore_source.generate import derivative_source

__all__ = ["derivative_source"]
