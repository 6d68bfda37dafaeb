"""The sizes the runner asks each eval for: GradBench's defaults trimmed to what runs here in minutes.

Each entry is the eval's own command-line options (see its `run.py`). `QUICK` is the smallest size
of each eval; `DEFAULT` is the full run. The runner adds `--min-runs` and `--min-seconds`.
"""

QUICK: dict[str, list[str]] = {
    "hello": [],
    "lse": ["-n", "2500"],
    "llsq": ["-n", "16"],
    "det": ["-l", "5"],
    "gmm": ["-d", "2", "-k", "5"],
    "kmeans": ["-k", "10", "-n", "1000", "-d", "8"],
    "ode": ["-n", "1000", "-s", "1"],
    "lstm": ["-l", "1", "-c", "1024"],
    "ba": ["--min", "1", "--max", "1"],
    "ht": ["--min", "1", "--max", "1"],
    "saddle": [],
    "particle": [],
}

DEFAULT: dict[str, list[str]] = {
    "hello": [],
    "lse": ["-n", "2500", "5000", "10000", "20000"],
    "llsq": ["-n", "16", "128", "1024", "8196"],
    "det": ["-l", "5", "6", "7", "8"],
    # gmm: d=10 k=25 takes numeric 41-61 s (1475 inputs, 2 objectives each) and forward 12 s; d=20 k=25 forward 61 s
    "gmm": ["-d", "2", "10", "-k", "5", "10"],
    # kmeans: k=100 takes numeric 18 s at n=1000 d=8, 37 s at d=16 and 84 s at n=10000 (k*d directions over
    # (k, n) distances, twice: a difference of differences), forward 4-7 s at n=1000 and 49-64 s at n=10000
    "kmeans": ["-k", "10", "100", "-n", "1000", "-d", "8"],
    # ode: at n=10000, s=10 forward takes 75 s and numeric 66 s (n directions, n^2 s work); n=3000 takes 13 s and 5 s
    "ode": ["-n", "1000", "3000", "-s", "1", "10"],
    # lstm: the time loop's length c is the trend; l=4 doubles every tool (reverse 18 s, forward 26 s, pytorch ~2x
    # reverse at l=4, c=4096); numeric (2 * 266 objectives at l=2) reaches the runner's timeout past c=1024
    "lstm": ["-l", "2", "-c", "1024", "4096"],
    # ba: p = 31843, 36455, 182072 observations (GradBench's pytorch loops per observation: ~185 s at ba1)
    "ba": ["--min", "1", "--max", "3"],
    # ht: 100, 192 points; ~10 s of the eval's own I/O per size and tool; GradBench's pytorch takes 28 s, 82 s
    "ht": ["--min", "1", "--max", "2"],
    "saddle": [],
    "particle": [],
}

# The tools --quick runs each eval on, where not all: saddle and particle have one fixed workload and
# name their modes (rr, ff, fr, rf = reverse/forward over reverse/forward), which the adcore-reverse
# and adcore-forward tools both map to those backends (adcore_tool.saddle.modes): the same runs, so
# --quick runs them once, on adcore-reverse; numeric's nested differences (110 s and 90 s here) and
# the other tools run in the default run.
QUICK_TOOLS: dict[str, tuple[str, ...]] = {
    "saddle": ("adcore-reverse",),
    "particle": ("adcore-reverse",),
}

# The evals whose runs take longest, longest first: the runner starts their runs first, so that none
# starts last and leaves the other cores idle (--quick on 2 cores: particle alone ~20 s of one core,
# saddle ~6 s, of ~70 s in all; started last, particle kept the run going ~15 s after everything else).
LONGEST_FIRST = ("particle", "saddle")
