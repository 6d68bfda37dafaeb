"""adcore-scipy: SciPy functions as differentiable adcore ops, named as SciPy names them.

`adcore_scipy.special`, `.stats`, `.linalg`, `.signal` and `.integrate` mirror SciPy's
modules (as `jax.scipy` and `autograd.scipy` do): `adcore_scipy.stats.norm.logpdf(x, mu, s)`
is differentiable on every backend. SciPy's ufuncs (`scipy.special.erf`, `gammaln`, ...)
are differentiable as written too, on traced values. SciPy itself is imported when an op
first runs, not when the plugin is loaded, so `import adcore` and loading the registry
stay light.
"""
