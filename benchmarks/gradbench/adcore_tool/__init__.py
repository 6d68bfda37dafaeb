"""adcore as a GradBench tool: one module per eval, each written the way an adcore user writes NumPy code."""
