"""Test helper: run a credit function under jax.jit.

Eager JAX dispatches and compiles every primitive separately, which is several times
slower than one jitted call on a loaded 2-core CI machine; running the functions the
way training runs them (jitted) also tests what matters.
"""

import jax


def jitted(fn, *args, **static):
    """fn(*args, **static) under jax.jit, with `static` keyword arguments baked in."""
    return jax.jit(lambda *a: fn(*a, **static))(*args)
