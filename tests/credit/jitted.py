"""Test helpers: run a credit function under jax.jit; compare vmap with a loop.

Eager JAX dispatches and compiles every primitive separately, which is several times
slower than one jitted call on a loaded 2-core CI machine; running the functions the
way training runs them (jitted) also tests what matters.
"""

import jax
import jax.numpy as jnp
import numpy as np


def jitted(fn, *args, **static):
    """fn(*args, **static) under jax.jit, with `static` keyword arguments baked in."""
    return jax.jit(lambda *a: fn(*a, **static))(*args)


def vmapped_and_looped(fn, *args):
    """(jax.vmap(fn)(*args), a Python loop of unbatched fn calls, stacked), one jit.

    Every array (pytree leaf) in `args` carries a leading batch axis of the same size.
    """

    def both(*batched):
        size = jax.tree.leaves(batched)[0].shape[0]
        looped = [fn(*jax.tree.map(lambda x: x[i], batched)) for i in range(size)]
        return jax.vmap(fn)(*batched), jax.tree.map(lambda *xs: jnp.stack(xs), *looped)

    return jax.jit(both)(*args)


def assert_trees_match(got, want, rtol=1e-5, atol=1e-6):
    """Same tree structure; floats close, other dtypes (bool, int) exactly equal."""
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for a, b in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and a.dtype == b.dtype
        if np.issubdtype(a.dtype, np.floating):
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(a, b)
