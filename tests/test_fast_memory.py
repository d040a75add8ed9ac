"""golden/fast_memory.py: the snapshot's residual added in and zeroed in one pass, bit for
bit NumPy's float32 sum, on every exponent, the specials and a size that is no multiple
of a vector."""

import numpy as np
import pytest

from inceptionn.golden.fast_memory import add_and_clear


def _patterns(n, seed):
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)   # every exponent
    x = bits.view(np.float32)
    special = np.float32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-45])
    x[:min(n, 6)] = special[:n]
    return x


@pytest.mark.parametrize("n", [0, 1, 7, 4099, 100_003])
def test_the_sum_is_numpys_and_the_residual_is_zeroed(n):
    x, r = _patterns(n, 1), _patterns(n, 2)[::-1].copy()
    with np.errstate(over="ignore", invalid="ignore"):
        want = x + r
    keep = x.copy()
    out = np.empty_like(x)
    assert add_and_clear(x, r, out) is out
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))   # NaNs' bits too
    assert np.array_equal(x, keep, equal_nan=True)
    assert not r.view(np.uint32).any()      # +0.0 everywhere


def test_in_place():
    x, r = _patterns(1000, 3), _patterns(1000, 4)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x + r
    add_and_clear(x, r, x)
    assert np.array_equal(x.view(np.uint32), want.view(np.uint32))
    assert not r.view(np.uint32).any()
