"""The compiled scaling (golden/fast_scale.py, behind codecs.choose_scale, _times_2_to and
ScaledCodec) against its NumPy definition, kept here as the reference: the same s and
the same bits on every float32 class (zeros, subnormals, normals at both ends, inf, quiet
and signalling NaN with their payloads), empty and all-non-finite chunks, every k and
several shares, at every scale, and a ScaledCodec frame and its decode equal to the
reference's."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inceptionn.drivers.collectives.codecs import (SCALE_MAX, SCALE_MIN, ScaledCodec,
                                                   WireCodec, _times_2_to, choose_scale)
from inceptionn.golden import fast_scale


# --- the NumPy definition (the code before golden/fast_scale.py), the reference ----------

def ref_choose_scale(values, k, share):
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    exp = (bits >> np.uint32(23)).astype(np.uint8)       # the sign bit falls off
    nonfinite = int(np.count_nonzero(exp == 255))
    finite = exp.size - nonfinite
    if finite == 0:
        return 0
    m = max(1, int(np.ceil(share * finite)))

    def at_least(e):            # finite values of octave >= e (inf and NaN are 255)
        return int(np.count_nonzero(exp >= e)) - nonfinite

    lo, hi = 0, 254             # at_least(lo) >= m; find the largest such
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if at_least(mid) >= m else (lo, mid - 1)
    e_m = lo
    e_max = int((np.where(exp == 255, 0, exp) if nonfinite else exp).max())
    s = e_m - 127 + k if e_m > 0 else SCALE_MIN
    s = max(s, e_max - 127 - 120, SCALE_MIN)
    return min(s, SCALE_MAX)


def ref_times_2_to(v, s):
    with np.errstate(all="ignore"):            # NaN and overflow pass, on purpose
        if -126 <= s <= 127:
            return v * np.float32(2.0 ** s)
        return np.ldexp(v, s).astype(np.float32)


# --- float32 bit patterns, every class ------------------------------------------------------

_ENDS = np.array([1, 2, 126, 127, 128, 253, 254], np.uint32)     # normal octaves at the ends


def _words(kind, rng, n, octaves):
    """n float32 words of one class (a random sign on all but "any")."""
    if kind == "zero":
        w = np.zeros(n, np.uint32)
    elif kind == "subnormal":
        w = rng.integers(1, 2 ** 23, n, dtype=np.uint32)
    elif kind == "normal at the ends":
        w = rng.choice(_ENDS, n) << 23 | rng.integers(0, 2 ** 23, n, dtype=np.uint32)
    elif kind == "few octaves":       # many ties at the share's boundary, as gradients have
        w = rng.choice(octaves, n) << 23 | rng.integers(0, 2 ** 23, n, dtype=np.uint32)
    elif kind == "inf":
        w = np.full(n, 0x7F800000, np.uint32)
    elif kind == "nan":               # quiet and signalling, any payload
        w = rng.integers(0x7F800001, 0x80000000, n, dtype=np.uint32)
    else:
        return rng.integers(0, 2 ** 32, n, dtype=np.uint32)
    return w | rng.integers(0, 2, n, dtype=np.uint32) << 31


_KINDS = ("zero", "subnormal", "normal at the ends", "few octaves", "inf", "nan", "any")


@st.composite
def chunks(draw):
    """float32 values: n of them, each of one of the drawn classes (hypothesis draws the
    size, the classes, the octaves and the seed; NumPy the values, which is fast)."""
    n = draw(st.integers(0, 300))
    kinds = sorted(draw(st.sets(st.sampled_from(_KINDS), min_size=1)))
    octaves = np.array(draw(st.lists(st.integers(0, 255), min_size=1, max_size=4)), np.uint32)
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    pick = rng.integers(0, len(kinds), n)
    w = np.zeros(n, np.uint32)
    for i, kind in enumerate(kinds):
        w[pick == i] = _words(kind, rng, int(np.count_nonzero(pick == i)), octaves)
    return w.view(np.float32)


_SHARES = st.one_of(st.sampled_from([0.01, 0.1, 0.25, 0.5, 0.75, 1.0]),
                    st.floats(1e-6, 1.0))


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


@settings(max_examples=300, deadline=None)
@given(chunks(), st.integers(1, 126), _SHARES)
def test_choose_scale_is_the_numpy_definition(v, k, share):
    assert choose_scale(v, k, share) == ref_choose_scale(v, k, share)


@settings(max_examples=300, deadline=None)
@given(chunks(), st.integers(-300, 300))
def test_the_product_is_the_numpy_definition(v, s):
    assert np.array_equal(_bits(_times_2_to(v, s)), _bits(ref_times_2_to(v, s)))
    w = v.copy()                                   # in place, as ScaledCodec.decode does
    assert _times_2_to(w, s, out=w) is w
    assert np.array_equal(_bits(w), _bits(ref_times_2_to(v, s)))


@settings(max_examples=200, deadline=None)
@given(chunks(), st.integers(1, 16), _SHARES)
def test_a_scaled_frame_and_its_decode_are_the_numpy_definitions(v, k, share):
    c = ScaledCodec(k, share)
    s_ref = ref_choose_scale(v, k, share)
    s, scaled = c.scale_down(v)
    assert s == s_ref and type(s) is int
    assert np.array_equal(_bits(scaled), _bits(ref_times_2_to(v, -s_ref)))
    into = np.empty_like(v)
    s_into, got = c.scale_down(v, out=into)
    assert s_into == s and got is into and np.array_equal(_bits(into), _bits(scaled))
    body = c.encode(v)
    assert body == bytes([s_ref - SCALE_MIN]) + WireCodec("bounded", k).encode(scaled)
    y = c.decode(body, v.size)
    inner = WireCodec("bounded", k).decode(body[1:], v.size)
    assert np.array_equal(_bits(y), _bits(ref_times_2_to(inner, s_ref)))
    assert np.array_equal(_bits(c.scale_up(inner, s_ref)), _bits(y))


def test_every_k_on_a_chunk_of_the_ring_with_all_the_classes():
    """A chunk longer than the ring's (2^16 floats, not a multiple of the sub-histograms)
    of gradient-like values with every special class mixed in."""
    rng = np.random.default_rng(7)
    v = (rng.standard_normal(65536 + 3) * 3e-5).astype(np.float32)
    specials = np.array([0.0, -0.0, 1e-45, -1e-40, 1.2e-38, 3.4e38, np.inf, -np.inf, np.nan],
                        np.float32)
    v[rng.integers(0, v.size, 500)] = rng.choice(specials, 500)
    v[:2] = np.array([0x7F800001, 0xFFC12345], np.uint32).view(np.float32)  # NaN payloads
    for k in range(1, 17):
        for share in (0.01, 0.25, 1.0):
            s = ref_choose_scale(v, k, share)
            assert choose_scale(v, k, share) == s, (k, share)
            got_s, scaled = ScaledCodec(k, share).scale_down(v)
            assert got_s == s
            assert np.array_equal(_bits(scaled), _bits(ref_times_2_to(v, -s)))


def test_edges_empty_non_finite_and_shares_outside_the_unit_range():
    nonfinite = np.array([np.inf, -np.inf, np.nan], np.float32)
    for v in (np.zeros(0, np.float32), nonfinite, np.zeros(5, np.float32),
              np.array([1e-45, 0.0], np.float32), np.array([3.4e38, 1e-30], np.float32)):
        for share in (-1.0, 0.0, 1e-300, 0.5, 1.0, 1.5, 1e300):
            assert choose_scale(v, 10, share) == ref_choose_scale(v, 10, share), (v, share)
    s, scaled = ScaledCodec(10).scale_down(nonfinite)
    assert s == 0 and np.array_equal(_bits(scaled), _bits(nonfinite))
    with pytest.raises(ValueError, match="share"):
        choose_scale(np.ones(4, np.float32), 10, float("nan"))
    with pytest.raises(ValueError, match="out"):
        _times_2_to(np.ones(4, np.float32), 3, out=np.empty(4, np.float64))
    with pytest.raises(ValueError, match="out"):
        ScaledCodec(10).scale_down(np.ones(4, np.float32), out=np.empty(5, np.float32))


def test_shapes_and_other_dtypes_are_taken_as_float32():
    x = np.arange(12, dtype=np.float64).reshape(3, 4) * 1e-3
    assert choose_scale(x, 10) == ref_choose_scale(x.astype(np.float32).ravel(), 10, 0.25)
    y = _times_2_to(x, -5)
    assert y.shape == (3, 4) and y.dtype == np.float32
    assert np.array_equal(y, ref_times_2_to(x.astype(np.float32), -5))
    strided = np.arange(20, dtype=np.float32)[::2]
    assert np.array_equal(_times_2_to(strided, 3), strided * np.float32(8))


def test_the_histogram_counts_every_octave():
    rng = np.random.default_rng(2)
    for n in (0, 1, 3, 4, 5, 1001):
        bits = rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
        assert np.array_equal(fast_scale.octave_histogram(bits),
                              np.bincount((bits >> 23) & 0xFF, minlength=256))
