"""`scipy.integrate`'s functions, differentiable: the same names and signatures as SciPy's."""
