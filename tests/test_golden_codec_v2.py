"""Wire format version 2, the bounded codec (docs/wire-format.md section 8): the blocks
against a scalar reference written here from the rule with exact rationals, the error
bound over every exponent, sign and k, special values, the shim and RX's acceptance."""

import struct
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from inceptionn import golden
from inceptionn.golden import compression_block, decompression_block

# ---------------------------------------------------------------- scalar reference


def ref_compress_v2(f, k):
    """(tag, stored, width) of one bit pattern: same tags as version 1; the 8-bit field
    q7 = floor(|f| 2^(fl+7)), the 16-bit field q15 = floor(|f| 2^15), fl = floor(k/2)."""
    s, e, m = f >> 31, (f >> 23) & 0xFF, f & 0x7FFFFF
    t, big = 127 - k, 127 - k + (k + 1) // 2
    if e >= 127:
        return 3, f, 4
    if e < t:
        return 0, 0, 0
    mag = Fraction((1 << 23) | m) * Fraction(2) ** (e - 150)
    if e >= big:
        q = int(mag * 2**15)
        assert q < 2**15
        return 2, (s << 15) | q, 2
    q = int(mag * 2 ** (k // 2 + 7))
    assert q < 2**7
    return 1, (s << 7) | q, 1


def ref_decompress_v2(tag, v, k):
    """The middle of the step: (2q + 1) 2^-(w+1), w = fl + 7 or 15, signed; +0.0 for tag 00."""
    if tag == 3:
        return v
    if tag == 0:
        return 0
    w = 15 if tag == 2 else k // 2 + 7
    top = 15 if tag == 2 else 7                      # the sign's bit in the field
    q, s = v & ((1 << top) - 1), (v >> top) & 1
    val = float(Fraction(2 * q + 1, 2 ** (w + 1)))
    b = struct.unpack("<I", struct.pack("<f", val))[0]
    assert struct.unpack("<f", struct.pack("<I", b))[0] == val     # exact in float32
    return b | (s << 31)


def every_exponent(rng, per):
    """Both signs, all 256 exponents, random mantissas plus the all-0 and all-1 ones."""
    e = np.repeat(np.arange(256, dtype=np.uint32), per)
    m = rng.integers(0, 1 << 23, e.size, dtype=np.uint32)
    m[::per], m[1::per] = 0, (1 << 23) - 1
    pos = (e << np.uint32(23)) | m
    return np.concatenate([pos, pos | np.uint32(1 << 31)])


ks = st.integers(1, 16)
bits_arrays = hnp.arrays(np.uint32, st.integers(0, 64), elements=st.integers(0, 2**32 - 1))


@settings(max_examples=150, deadline=None)
@given(bits_arrays, ks)
def test_blocks_match_the_scalar_reference(bits, k):
    tag, stored, width, dec = compression_block(bits, k, "bounded")
    for i, f in enumerate(bits.tolist()):
        rt, rv, rw = ref_compress_v2(f, k)
        assert (int(tag[i]), int(stored[i]), int(width[i])) == (rt, rv, rw), (hex(f), k)
        assert int(dec[i]) == ref_decompress_v2(rt, rv, k), (hex(f), k)
    assert decompression_block(tag, stored, k, "bounded").tolist() == dec.tolist()
    # The tags and widths are version 1's: every input costs the same bytes.
    assert (tag == compression_block(bits, k, "paper")[0]).all()


@pytest.mark.parametrize("k", range(1, 17))
def test_every_8_and_16_bit_field_decodes_as_the_reference(k):
    """The decoding table, whole: all 256 8-bit and 65536 16-bit fields."""
    f8 = np.arange(256, dtype=np.uint32)
    f16 = np.arange(1 << 16, dtype=np.uint32)
    got8 = decompression_block(np.ones(256, np.uint8), f8, k, "bounded")
    assert got8.tolist() == [ref_decompress_v2(1, v, k) for v in range(256)]
    if k in (1, 10, 16):  # the 16-bit table does not depend on k
        got16 = decompression_block(np.full(f16.size, 2, np.uint8), f16, k, "bounded")
        assert got16.tolist() == [ref_decompress_v2(2, v, k) for v in range(1 << 16)]


@pytest.mark.parametrize("k", range(1, 17))
def test_error_within_2_to_the_minus_k_for_every_finite_float(k):
    """Exhaustive over exponents and signs, random mantissas: |decoded - x| <= 2^-k, and
    < 2^-k for k <= 14; the lossy bands within half of it (middle of the step) for
    k <= 14; decoded values keep their sign, stay in their band (idempotent) and are
    never 0 in a lossy band."""
    rng = np.random.default_rng(1000 + k)
    bits = every_exponent(rng, 200)
    x = bits.view(np.float32)
    y = golden.roundtrip(x, k, "bounded")
    yb = y.view(np.uint32)
    tag = compression_block(bits, k, "bounded")[0]
    fin = np.isfinite(x)
    err = np.abs(y[fin].astype(np.float64) - x[fin].astype(np.float64))
    assert err.max() <= 2.0 ** -k
    lossy = (tag == 1) | (tag == 2)
    if k <= 14:
        assert err.max() < 2.0 ** -k
        assert err[lossy[fin]].max() <= 2.0 ** -(k + 1)
    assert ((yb >> 31) == (bits >> 31))[lossy].all() and (y[lossy] != 0).all()
    assert (yb[tag == 3] == bits[tag == 3]).all()            # raw: Inf, NaN, |f| >= 1 exact
    assert (yb[tag == 0] == 0).all()                         # +0.0, never -0.0
    assert (golden.roundtrip(y, k, "bounded").view(np.uint32) == yb).all()
    assert (compression_block(yb, k, "bounded")[0] == tag).all()


SPECIALS = [
    (0x7FC12345, 3, 0x7FC12345),      # quiet NaN with payload, kept
    (0xFFA00001, 3, 0xFFA00001),      # signalling NaN, negative, kept
    (0x7F800000, 3, 0x7F800000),      # +Inf
    (0xFF800000, 3, 0xFF800000),      # -Inf
    (0x7F7FFFFF, 3, 0x7F7FFFFF),      # largest float
    (0x00000001, 0, 0x00000000),      # smallest denormal
    (0x807FFFFF, 0, 0x00000000),      # largest negative denormal
    (0x80000000, 0, 0x00000000),      # -0.0 -> +0.0
    (0x00000000, 0, 0x00000000),
]


@pytest.mark.parametrize("k", [1, 10, 16])
@pytest.mark.parametrize("f,tag,dec", SPECIALS, ids=[hex(s[0]) for s in SPECIALS])
def test_special_values_as_version_1(f, tag, dec, k):
    for codec in ("paper", "bounded"):
        t, _, _, d = compression_block(np.array([f], np.uint32), k, codec)
        assert (int(t[0]), int(d[0])) == (tag, dec)


def test_the_8bit_band_no_longer_vanishes():
    """Version 1 decodes every 8-bit code below 2^-7 to 0 at k = 10; version 2 none."""
    x = np.random.default_rng(0).normal(0, 1e-3, 100_000).astype(np.float32)
    tag = compression_block(x.view(np.uint32), 10)[0]
    p = golden.roundtrip(x, 10, "paper")
    b = golden.roundtrip(x, 10, "bounded")
    assert (tag == 1).mean() > 0.3
    assert (p[tag == 1] == 0).all() and not (b[tag == 1] == 0).any()
    assert np.abs(b - x).max() < 2.0 ** -10 < np.abs(p - x).max()
    assert golden.band_stats(x, 10, "paper").zeroed_8bit == 1.0   # the stats helper agrees
    assert golden.band_stats(x, 10, "bounded").zeroed_8bit == 0.0
    assert len(golden.encode(x, 10, "bounded")) == len(golden.encode(x, 10, "paper"))


def test_q_zero_at_k_15_and_16_decodes_to_half_a_step():
    """The only inputs with q7 = 0: the 8-bit band's bottom octave at k = 15, 16."""
    for k in (15, 16):
        lo = 2.0 ** -k
        x = np.array([lo, -lo, np.nextafter(np.float32(2 * lo), 0)], np.float32)
        tag, stored, _, dec = compression_block(x.view(np.uint32), k, "bounded")
        assert tag.tolist() == [1, 1, 1]
        if k == 16:
            assert (stored[:2] & 0x7F).tolist() == [0, 0]
        y = dec.view(np.float32).astype(np.float64)
        assert (np.abs(y - x) <= 2.0 ** -k).all() and (np.sign(y) == np.sign(x)).all()


def test_k_range_and_codec_names():
    for k in (0, 17, 126, -1, 2.0, None):
        with pytest.raises(ValueError, match="k"):
            golden.encode(np.ones(3, np.float32), k, "bounded")
        with pytest.raises(ValueError, match="k"):
            compression_block(np.zeros(3, np.uint32), k, "bounded")
    with pytest.raises(ValueError, match="codec"):
        golden.encode(np.ones(3, np.float32), 10, "eb")
    with pytest.raises(ValueError, match="give k"):
        decompression_block([1], [3], None, "bounded")
    assert golden.k_range("bounded") == (1, 16) and golden.k_range("paper") == (1, 126)
    assert golden.CODEC_DEFAULT == "bounded"
    # the float front end defaults to the bounded codec, the blocks to version 1's
    x = np.random.default_rng(1).normal(0, 1e-2, 100).astype(np.float32)
    assert golden.encode(x, 10) == golden.encode(x, 10, "bounded") != golden.encode(x, 10, "paper")
    assert golden.pack_groups(x.view(np.uint32), 10) == golden.encode(x, 10, "paper")


# ---------------------------------------------------------------- shim and payload

def test_shim_of_each_version():
    assert golden.make_shim(1000, 10, "bounded") == bytes([0x03, 0xE8, 0xC6, 10])
    assert golden.make_shim(1000, 10, "paper") == bytes([0x03, 0xE8, 0xC5, 10])
    assert golden.make_shim(1000, 10) == golden.make_shim(1000, 10, "paper")
    with pytest.raises(ValueError, match="k"):
        golden.make_shim(1000, 17, "bounded")
    payload = np.random.default_rng(2).normal(0, 5e-2, 250).astype(np.float32).tobytes() + b"xy"
    for k in (3, 9, 16):
        comp = golden.compress_payload(payload, k, "bounded")
        assert golden.shim_codec(comp) == (len(payload), "bounded", k)
        data, bad = golden.decompress_payload(comp)
        assert not bad and data == golden.decoded_payload(payload, k, "bounded")
        # The decoder uses byte 3: another k decodes the 8-bit fields to other values.
        other = comp[:3] + bytes([k + 1 if k < 16 else k - 1]) + comp[4:]
        assert golden.decompress_payload(other)[0] != data
    for bad_k in (0, 17, 255):
        with pytest.raises(ValueError, match="version-2 shim carries k"):
            golden.decompress_payload(comp[:3] + bytes([bad_k]) + comp[4:])
    with pytest.raises(ValueError, match="magic"):
        golden.decompress_payload(comp[:2] + b"\xC8" + comp[3:])


def test_min_compressed_len():
    for length in range(0, 300):
        n, r = divmod(length, 4)
        zeros = golden.compress_payload(bytes(length), 10, "bounded")
        # all-zero values take a 2-byte tag word per group: the fewest bytes possible
        assert golden.min_compressed_len(length) == len(zeros) == 4 + 2 * -(-n // 8) + r
