"""Value codec of wire version 1, the paper's (spec section 1): properties, band boundaries,
special values, and the vectorized blocks against a scalar reference written from the
spec here. (Version 2, the bounded codec: tests/test_golden_codec_v2.py.)"""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from inceptionn import golden
from inceptionn.golden import compression_block, decompression_block, decode, encode, roundtrip


# ---------------------------------------------------------------- scalar reference

def ref_compress(f, k):
    """Algorithm 2 on one Python int, straight from the spec's table."""
    s, e, m = f >> 31, (f >> 23) & 0xFF, f & 0x7FFFFF
    t = 127 - k
    big = t + (k + 1) // 2
    if e >= 127:
        return 3, f, 4
    if e < t:
        return 0, 0, 0
    fixed = ((1 << 23) | m) >> (127 - e)
    if e >= big:
        return 2, (s << 15) | ((fixed >> 8) & 0x7FFF), 2
    return 1, (s << 7) | ((fixed >> 16) & 0x7F), 1


def ref_decompress(tag, v):
    """Algorithm 3 bit by bit: first1_loc_from_MSB, shift, concat(s, e, m)."""
    if tag == 3:
        return v
    if tag == 0:
        return 0
    nbits = 7 if tag == 1 else 15
    q, s = v & ((1 << nbits) - 1), (v >> nbits) & 1
    if q == 0:
        return 0
    n_shift = nbits + 1 - q.bit_length()          # 1-based distance of the leading one
    frac = (q << n_shift) & ((1 << nbits) - 1)    # the leading one becomes implicit
    return (s << 31) | ((127 - n_shift) << 23) | (frac << (23 - nbits))


def f2b(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def b2f(b):
    return struct.unpack("<f", struct.pack("<I", b))[0]


bits_arrays = hnp.arrays(np.uint32, st.integers(0, 64), elements=st.integers(0, 2**32 - 1))
ks = st.integers(1, 126)


@settings(max_examples=150, deadline=None)
@given(bits_arrays, ks)
def test_vectorized_matches_scalar_reference(bits, k):
    tag, stored, width, dec = compression_block(bits, k)
    for i, f in enumerate(bits.tolist()):
        rt, rv, rw = ref_compress(f, k)
        assert (int(tag[i]), int(stored[i]), int(width[i])) == (rt, rv, rw), hex(f)
        assert int(dec[i]) == ref_decompress(rt, rv), hex(f)
    assert decompression_block(tag, stored).tolist() == dec.tolist()


# Values that sit in the lossy bands, for the error properties.
def _with_exponent(elo, ehi):
    return st.builds(lambda s, e, m: (s << 31) | (e << 23) | m,
                     st.integers(0, 1), st.integers(elo, ehi), st.integers(0, 2**23 - 1))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(_with_exponent(0, 255), _with_exponent(100, 127)), max_size=40), ks)
def test_idempotent_sign_and_error(raw, k):
    bits = np.array(raw, dtype=np.uint32)
    x = bits.view(np.float32)
    y = roundtrip(x, k, "paper")
    z = roundtrip(y, k, "paper")
    assert y.view(np.uint32).tolist() == z.view(np.uint32).tolist()      # idempotent
    tag = compression_block(bits, k)[0]
    yb = y.view(np.uint32)
    nonzero = yb != 0
    assert ((yb >> 31) == (bits >> 31))[nonzero].all()                   # sign kept
    assert not (yb == 0x80000000).any()                                  # never -0.0 out
    with np.errstate(invalid="ignore"):
        err = np.abs(y.astype(np.float64) - x.astype(np.float64))
    assert (err[tag == 1] < 2.0**-7).all()
    assert (err[tag == 2] < 2.0**-15).all()
    assert (yb[tag == 3] == bits[tag == 3]).all()                        # raw band exact
    assert (np.abs(x[tag == 0].astype(np.float64)) < 2.0**-k).all()
    assert (yb[tag == 0] == 0).all()


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 50),
                  elements=st.floats(width=32, allow_nan=True, allow_infinity=True)), ks)
def test_encode_decode_every_float_class(x, k):
    buf = encode(x, k, "paper")
    y = decode(buf, x.size, codec="paper")
    expect = np.array([ref_decompress(*ref_compress(f, k)[:2]) for f in x.view(np.uint32).tolist()],
                      dtype=np.uint32)
    assert y.view(np.uint32).tolist() == expect.tolist()


# e = T-1, T, M-1, M, 126, 127 -> expected tag, hand-computed per k.
BOUNDARIES = {
    1: {125: 0, 126: 1, 127: 3},                                  # T=126, M=127: no 16-bit band
    2: {124: 0, 125: 1, 126: 2, 127: 3},                          # T=125, M=126
    7: {119: 0, 120: 1, 123: 1, 124: 2, 126: 2, 127: 3},          # T=120, M=124
    8: {118: 0, 119: 1, 122: 1, 123: 2, 126: 2, 127: 3},          # T=119, M=123
    10: {116: 0, 117: 1, 121: 1, 122: 2, 126: 2, 127: 3},         # T=117, M=122
    126: {0: 0, 1: 1, 63: 1, 64: 2, 126: 2, 127: 3},              # T=1, M=64
}


@pytest.mark.parametrize("k", sorted(BOUNDARIES))
def test_band_boundaries(k):
    for e, want in BOUNDARIES[k].items():
        for m in (0, 1, 0x400000, 0x7FFFFF):
            for s in (0, 1):
                f = (s << 31) | (e << 23) | m
                tag = compression_block(np.array([f], np.uint32), k)[0][0]
                assert tag == want, (k, e, m, s)
    t, big = golden.band_limits(k)
    assert (t, big) == (127 - k, 127 - k + (k + 1) // 2)


SPECIALS = [
    (0x7FC12345, 3, 0x7FC12345),      # quiet NaN with payload, kept
    (0xFFA00001, 3, 0xFFA00001),      # signalling NaN, negative, kept
    (0x7F800000, 3, 0x7F800000),      # +Inf
    (0xFF800000, 3, 0xFF800000),      # -Inf
    (0x7F7FFFFF, 3, 0x7F7FFFFF),      # largest float
    (0x3F800000, 3, 0x3F800000),      # 1.0
    (0xBF800000, 3, 0xBF800000),      # -1.0
    (0x00000001, 0, 0x00000000),      # smallest denormal
    (0x807FFFFF, 0, 0x00000000),      # largest negative denormal
    (0x80000000, 0, 0x00000000),      # -0.0 -> +0.0
    (0x00000000, 0, 0x00000000),
    (0x3F7FFFFF, 2, f2b(1 - 2.0**-15)),   # just below 1: q15 = 0x7FFF
    (0x3F000000, 2, 0x3F000000),      # 0.5 exact
    (0xBE800000, 2, 0xBE800000),      # -0.25 exact
    (f2b(0.3), 2, f2b(9830 / 2**15)),
    (f2b(-0.003), 1, 0x00000000),     # 8-bit band below 2^-7: q7 = 0 -> +0.0
    (f2b(-0.0077), 1, 0x00000000),    # 0.0077 * 128 = 0.99 -> q7 = 0
    (f2b(-0.0079), 1, 0xBC000000),    # -2^-7: the sign stays with a non-zero q
    (f2b(0.0079), 1, f2b(2.0**-7)),   # 0.0079 * 128 = 1.01 -> q7 = 1
]


@pytest.mark.parametrize("f,tag,dec", SPECIALS, ids=[hex(s[0]) for s in SPECIALS])
def test_special_values_k10(f, tag, dec):
    t, _, w, d = compression_block(np.array([f], np.uint32), 10)
    assert int(t[0]) == tag
    assert int(w[0]) == [0, 1, 2, 4][tag]
    assert int(d[0]) == dec


def test_8bit_band_truncation_example():
    # With k = 10 a value of 0.0059 is in the 8-bit band (e = 119) and comes back as 0.
    x = np.array([0.0059, 0.0100, 0.0120], np.float32)
    y = roundtrip(x, 10, "paper")
    assert y.tolist() == [0.0, 2.0**-7, 2.0**-7]


def test_shapes_and_empty():
    x = np.arange(-12, 12, dtype=np.float32).reshape(4, 6) / np.float32(16)
    y = roundtrip(x, 10, "paper")
    assert y.shape == (4, 6) and y.dtype == np.float32
    assert np.array_equal(y, x)                       # multiples of 1/16 are exact
    assert roundtrip(np.zeros(0, np.float32), 10, "paper").size == 0
    assert encode(np.zeros(0, np.float32), 3, "paper") == b""
    tag, stored, width, dec = compression_block(np.zeros((2, 3), np.uint32), 10)
    assert tag.shape == stored.shape == width.shape == dec.shape == (2, 3)


@pytest.mark.parametrize("k", [0, 127, -1, 10.0, True, "10", None])
def test_bad_k(k):
    with pytest.raises(ValueError, match="k"):
        encode(np.zeros(3, np.float32), k, "paper")
    with pytest.raises(ValueError, match="k"):
        compression_block(np.zeros(3, np.uint32), k)


def test_numpy_integer_k_accepted():
    assert encode(np.ones(1, np.float32), np.int64(10)) == encode(np.ones(1, np.float32), 10)
    assert encode(np.ones(1, np.float32), np.int64(10), "paper") == encode(np.ones(1, np.float32), 10,
                                                                          "paper")


@pytest.mark.parametrize("x", [np.zeros(3, np.float64), np.zeros(3, np.float16), [0.5, 0.25],
                               np.zeros(3, np.int32)])
def test_non_float32_rejected(x):
    with pytest.raises(ValueError, match="float32"):
        encode(x, 10)
    with pytest.raises(ValueError, match="float32"):
        roundtrip(x, 10)


def test_bad_bit_patterns_and_tags():
    with pytest.raises(ValueError, match="uint32"):
        compression_block(np.array([-1]), 10)
    with pytest.raises(ValueError, match="uint32"):
        compression_block(np.zeros(2, np.float32), 10)
    with pytest.raises(ValueError, match="tags"):
        decompression_block(np.array([4]), np.array([0], np.uint32))


def test_decompression_ignores_bits_above_width():
    tag = np.array([1, 2, 0], np.uint8)
    stored = np.array([0xFFFFFF81, 0xFFFF8001, 0xFFFFFFFF], np.uint32)
    out = decompression_block(tag, stored)
    assert [b2f(int(b)) for b in out] == [-2.0**-7, -2.0**-15, 0.0]
