"""The parts of a complex value: real, imag, conj (conjugate) and angle, and the derivative pieces of
abs on complex inputs.

The rules follow JAX's convention (docs/complex.md): a JVP is the R-linear map of the tangent, a VJP
its transpose under <u, v> = Re(sum(u * v)). None of these ops is holomorphic: for L(dz) = a dz +
b conj(dz), the VJP of a cotangent c is a c + conj(b c). So real's VJP is c (as a complex value),
imag's is -1j c, conj's is conj(c), abs's is c conj(z) / |z| and angle's is -1j c conj(z) / |z|**2.
Each op is also right on a real input: real(x) = x, imag(x) = 0, conj(x) = x, and angle(x) is 0 or
pi, a step with derivative 0 (also at 0, as floor's and sign's). At z = 0, abs and angle have no
derivative: 0 there, as abs'(0) = 0 for real x (and JAX's abs(0j)).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from adcore.core import concrete, plain_numbers
from adcore.ops import elementwise
from adcore.spec import NONZERO, REAL, Kink, OpSpec, elementwise_samples


def _part(name: str, impl, domain=REAL, **spec) -> OpSpec:
    return OpSpec(
        name,
        impl,
        nin=1,
        samples=elementwise_samples(domain, params=spec.pop("sample_params", ({},))),
        elementwise=True,
        accepts_complex=True,
        **spec,
    )


def _real(x):
    return np.real(x)


def _imag(x):
    return np.imag(x)


def _angle(z, deg=False):
    return np.angle(z, deg=deg)


def _angle_distance(z, deg=False):
    """How far z is from angle's jump: 0 for a real input (a step at 0), the negative real axis
    (the branch cut, a jump of 2 pi) for a complex one."""
    z = np.asarray(z)
    if z.dtype.kind != "c":
        return np.abs(z)
    return np.where(z.real > 0, np.abs(z), np.abs(z.imag))


real = _part("real", _real, numpy=(np.real,), doc="the real part; x itself for a real x")
imag = _part("imag", _imag, numpy=(np.imag,), doc="the imaginary part; 0 (derivative 0) for a real x")
conj = _part("conj", np.conjugate, numpy=(np.conjugate,), aliases=("conjugate",), doc="the complex conjugate")
angle = _part(
    "angle",
    _angle,
    NONZERO,
    params=("deg",),
    numpy=(np.angle,),
    sample_params=({}, {"deg": True}),
    kinks=(Kink(([-1.0, 0.0, 2.0],), (np.diag([0.0, 0, 0]),), why="angle of a real x: a step, 0 also at 0"),),
    kink_distance=_angle_distance,
    doc="atan2(imag, real): derivative Im(dz / z) (0 at z = 0); 0 for a real x, a step at 0",
)


# --- derivative pieces the rule packages share (written with ops, so rules nest) --------


def is_complex(x: Any) -> bool:
    """Whether x (an array, a traced value or a number) is complex."""
    dtype = getattr(x, "dtype", None)
    return (dtype if dtype is not None else np.result_type(x)).kind == "c"


def as_complex(g: Any, x: Any) -> Any:
    """A real cotangent g as the cotangent of x: g + 0j when x is complex (of x's precision), else g."""
    return g + 0j if is_complex(x) else g


def unit_conjugate(z: Any, size: Any) -> Any:
    """conj(z) / |z| (size is |z|), and 0 where z = 0: d|z| is Re of this times dz."""
    zero = concrete(size) == 0
    if not plain_numbers(zero).any():  # (under vmap: in any example)
        return conj(z) / size
    return conj(z) / elementwise.where(zero, 1.0, size)


def inverse_conjugate(z: Any) -> Any:
    """conj(z) / |z|**2 = 1 / z, and 0 where z = 0: d angle(z) is Im of this times dz."""
    size2 = real(z * conj(z))
    zero = concrete(size2) == 0
    if not plain_numbers(zero).any():  # (under vmap: in any example)
        return conj(z) / size2
    return conj(z) / elementwise.where(zero, 1.0, size2)


def angle_unit(deg: bool) -> float:
    """d angle in degrees per radian, or 1."""
    return 180 / np.pi if deg else 1.0


def zeros_like(v: Any, dtype: Any = None) -> np.ndarray:
    """A constant 0 with v's shape (in dtype, else v's): the derivative of a step."""
    return np.zeros(v.shape, dtype=v.dtype if dtype is None else dtype)


def abs_slope(x: Any, ans: Any) -> Any:
    """d|x| = Re(slope dx): sign(x) for a real x (abs'(0) = 0), conj(x) / |x| for a complex one."""
    return unit_conjugate(x, ans) if is_complex(x) else elementwise.sign(x)


def real_if_complex(v: Any) -> Any:
    """Re v for a complex v, else v itself (a real output's tangent)."""
    return real(v) if is_complex(v) else v


def conj_if_complex(v: Any) -> Any:
    """conj(v) for a complex v, else v itself (no op recorded for a real one)."""
    return conj(v) if is_complex(v) else v


def complex_base(x: Any, ans: Any) -> Any:
    """The base of a power x**y as the log in d/dy = x**y log x needs it: complex where the power is
    (a real negative x with a complex y has log x = log|x| + i pi, not NaN)."""
    return x + 0j if is_complex(ans) and not is_complex(x) else x
