"""Draw docs/numeric_errors.png: seed 001's truncation-versus-round-off picture, made by adcore.

The absolute error of f'(1.5), f(x) = exp(x) / sqrt(sin(x)**3 + cos(x)**3), against the
step h, for forward and central differences, Richardson extrapolation (h is its first,
largest step) and the complex step. Every point is computed by adcore's numeric backend;
where it refuses a step (x + h == x in float64, or f not finite at x ± h) the curve has
a gap. The dashed reference slopes take f, f'' and f''' from adcore's forward mode.

    python docs/plot_numeric_errors.py    # writes numeric_errors.png next to this file
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from adcore_numeric.steps import first_step
from matplotlib.backends.backend_agg import FigureCanvasAgg  # no screen needed
from matplotlib.figure import Figure

import adcore
from adcore.errors import AdcoreError

X = 1.5
EXACT = 4.053427893898620657714188  # f'(1.5), from mpmath
FLOOR = 1e-17  # an error of exactly 0 is drawn here
EPS = float(np.finfo(np.float64).eps)
OUT = Path(__file__).with_name("numeric_errors.png")

METHODS = {  # method: (legend label, colour, line width)
    "forward": ("forward  (f(x+h) − f(x)) / h", "#d62728", 1.6),
    # central and complex share the truncation error f'''·h²/6: central goes wider, underneath
    "central": ("central  (f(x+h) − f(x−h)) / 2h", "#1f77b4", 3.0),
    "richardson": ("richardson  (h = its first step)", "#2ca02c", 1.6),
    "complex": ("complex step  Im f(x+ih) / h", "#9467bd", 1.6),
}


def f(x):
    return np.exp(x) / np.sqrt(np.sin(x) ** 3 + np.cos(x) ** 3)


def error(method: str, step: float | None = None) -> float:
    """|adcore's derivative − exact|, floored at FLOOR; nan where adcore refuses the step."""
    try:
        d = adcore.differentiate(f, backend="numeric", method=method, step=step)(X)
    except AdcoreError:
        return np.nan
    return max(abs(float(d) - EXACT), FLOOR)


def screen_angle(ax, curve, h: float) -> float:
    """The angle on the page, in degrees, of the line y = curve(h) at h."""
    (x1, y1), (x2, y2) = ax.transData.transform([(h, curve(h)), (10 * h, curve(10 * h))])
    return float(np.degrees(np.arctan2(y2 - y1, x2 - x1)))


def main() -> None:
    hs = np.logspace(-16, 0, 161)
    second = adcore.hessian(f, backend="forward")
    f0, f2, f3 = float(f(X)), float(second(X)), float(adcore.differentiate(second, backend="forward")(X))
    slopes = [  # (label, line, where the label goes, how far above the line)
        ("truncation ~ h", lambda h: f2 / 2 * h, 3e-4, 8.0),
        ("truncation ~ h²", lambda h: f3 / 6 * h**2, 2e-3, 1 / 25),
        ("round-off ~ ε/h", lambda h: EPS * f0 / h, 1e-11, 60.0),
    ]

    fig = Figure(figsize=(9, 6), dpi=100)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_yscale("log")
    for _, line, _, _ in slopes:
        ax.plot(hs, line(hs), color="0.6", lw=1.0, ls="--", zorder=1)
    ax.axhline(FLOOR, color="0.75", lw=0.8, ls=":", zorder=0)
    ax.text(1e-3, 1.6 * FLOOR, "error exactly 0", color="0.45", fontsize=9, ha="center", va="bottom")

    for method, (label, colour, width) in METHODS.items():
        under = 2 if method == "central" else 3
        ax.plot(hs, [error(method, h) for h in hs], color=colour, lw=width, label=label, zorder=under)
        default = float(first_step(np.array(X), method))
        ax.plot(default, error(method), marker="o", ms=9, mfc=colour, mec="black", mew=1.2, zorder=4)
    ax.plot([], [], marker="o", ms=9, mfc="white", mec="black", mew=1.2, ls="none", label="default step")

    ax.set_xlim(1e-16, 1.0)
    ax.set_ylim(FLOOR / 3, 30)
    ax.set_xlabel("step h", fontsize=12)
    ax.set_ylabel("absolute error of f′(1.5)", fontsize=12)
    ax.set_title("adcore's numeric backend on f(x) = eˣ / √(sin³x + cos³x) at x = 1.5, float64", fontsize=12)
    ax.tick_params(labelsize=10)
    ax.grid(True, which="major", color="0.92", lw=0.8, zorder=0)
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 0.06), fontsize=10, framealpha=0.95)
    fig.text(
        0.01,
        0.01,
        "Gaps: steps adcore refuses, where x + h == x in float64 (for richardson, already at h/2) "
        "or f is not finite at x ± h (h > 3π/4 − 1.5).",
        fontsize=8,
        color="0.35",
    )
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    for label, line, h, above in slopes:  # rotated to the lines, now that the layout is fixed
        angle = screen_angle(ax, line, h)
        ax.text(h, above * line(h), label, rotation=angle, color="0.4", fontsize=10, ha="center", va="center")
    fig.savefig(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
