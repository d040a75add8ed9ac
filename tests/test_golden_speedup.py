"""The golden model's fast paths (lookup tables, chunked in-place passes, boolean-mask
packing, strided group-start search) against a plain reference written from the spec:
equal results on random and special inputs, for every k. Equality only, no timing."""

import numpy as np
import pytest

from inceptionn.golden import (compress_payload, compression_block, decoded_payload,
                               decompress_payload, decompression_block, pack_groups,
                               unpack_groups)
import importlib

# The block functions share their modules' names, so the modules come from importlib.
compression_block_mod = importlib.import_module("inceptionn.golden.compression_block")
decompression_unit_mod = importlib.import_module("inceptionn.golden.decompression_unit")
payload = importlib.import_module("inceptionn.golden.payload")

WIDTH = (0, 1, 2, 4)


# --- plain reference (spec sections 1 and 2), one NumPy expression per rule ---------

def ref_block(f, k):
    """Spec section 1 rules as written: (tag, stored, width, decoded), int64 arithmetic."""
    f = f.astype(np.int64)
    t, m_lim = 127 - k, 127 - k + (k + 1) // 2
    s, e, m = f >> 31, (f >> 23) & 0xFF, f & 0x7FFFFF
    fixed = (m | (1 << 23)) >> np.minimum(127 - np.minimum(e, 127), 40)
    q15, q7 = (fixed >> 8) & 0x7FFF, (fixed >> 16) & 0x7F
    tag = np.select([e >= 127, e < t, e >= m_lim], [3, 0, 2], 1)
    stored = np.select([tag == 3, tag == 0, tag == 2], [f, 0, (s << 15) | q15], (s << 7) | q7)
    return tag, stored, np.array(WIDTH)[tag], ref_decode(tag, stored)


def ref_decode(tag, v):
    """Spec section 1 decoding: q * 2^-7 or q * 2^-15 with the sign, +0.0 for q = 0."""
    tag, v = np.broadcast_arrays(np.asarray(tag, np.int64), np.asarray(v, np.int64))
    q = np.where(tag == 1, v & 0x7F, v & 0x7FFF)
    s = np.where(tag == 1, (v >> 7) & 1, (v >> 15) & 1)
    scale = np.where(tag == 1, 2.0 ** -7, 2.0 ** -15)
    mag = (q * scale).astype(np.float32).view(np.uint32).astype(np.int64)
    fixed = np.where(q != 0, mag | (s << 31), 0)
    return np.select([tag == 3, tag == 0], [v & 0xFFFFFFFF, 0], fixed)


def ref_pack(bits, k):
    tag, stored, width, _ = ref_block(bits, k)
    out = bytearray()
    for g in range(0, bits.size, 8):
        word = sum(int(x) << (2 * i) for i, x in enumerate(tag[g:g + 8]))
        out += word.to_bytes(2, "little")
        for v, w in zip(stored[g:g + 8], width[g:g + 8]):
            out += int(v).to_bytes(4, "little")[:w]
    return bytes(out)


def ref_unpack(buf, n):
    """Walk the groups one by one; bytes past the end read as zeros."""
    data = bytes(buf)

    def read(pos, w):
        return int.from_bytes(data[pos:pos + w].ljust(w, b"\0"), "little")

    tags, vals, pos = [], [], 0
    for _ in range(-(-n // 8)):
        word = read(pos, 2)
        pos += 2
        for i in range(8):
            t = (word >> (2 * i)) & 3
            tags.append(t)
            vals.append(read(pos, WIDTH[t]))
            pos += WIDTH[t]
    bits = ref_decode(np.array(tags, np.int64), np.array(vals, np.int64))[:n]
    return bits, pos, pos <= len(data)


# --- inputs ------------------------------------------------------------------------

RNG = np.random.default_rng(20181020)
# Every sign/exponent with mantissas at the band edges and a few random ones.
_PREFIX = np.arange(512, dtype=np.uint32) << np.uint32(23)
_MANT = np.array([0, 1, 0x7F, 0x80, 0xFF, 0x100, 0x7FFF, 0x8000, 0xFFFF, 0x10000,
                  0x400000, 0x7FFFFE, 0x7FFFFF], dtype=np.uint32)
SPECIAL = np.concatenate([(_PREFIX[:, None] | _MANT).ravel(),
                          (_PREFIX[:, None] | RNG.integers(0, 1 << 23, (512, 8), dtype=np.uint32)).ravel()])


def random_bits(n, kind):
    if kind == "uniform":
        return RNG.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    scale = 2.0 ** -float(RNG.integers(0, 24))
    return RNG.normal(0, scale, n).astype(np.float32).view(np.uint32)


def check_block(bits, k):
    got = compression_block(bits, k)
    want = ref_block(bits, k)
    for g, w, dtype in zip(got, want, (np.uint8, np.uint32, np.uint8, np.uint32)):
        assert g.dtype == dtype and g.shape == bits.shape
        assert np.array_equal(g.astype(np.int64), w)


# --- value codec -------------------------------------------------------------------

@pytest.mark.parametrize("k", range(1, 127))
def test_compression_block_every_k(k):
    check_block(SPECIAL, k)
    check_block(random_bits(3000, "uniform"), k)
    check_block(random_bits(3000, "normal"), k)


def test_compression_block_shapes_and_chunks():
    n = 2 * compression_block_mod.CHUNK + 77  # several chunks and a short one
    for kind in ("uniform", "normal"):
        bits = random_bits(n, kind)
        check_block(bits, 10)
        check_block(bits[::3], 7)                    # not contiguous
    check_block(random_bits(6 * 35, "normal").reshape(6, 35), 12)
    check_block(np.zeros(0, np.uint32), 10)
    one = np.uint32(0x3A83126F)                       # 0.001: 8-bit band at k = 10
    got = compression_block(one, 10)
    assert [int(x) for x in got] == [int(w[0]) for w in ref_block(np.array([one]), 10)]
    assert all(np.shape(x) == () for x in got)


def test_decompression_block_random_fields():
    n = compression_block_mod.CHUNK + 123
    tag = RNG.integers(0, 4, n).astype(np.uint8)
    stored = random_bits(n, "uniform")                 # bits above the width are ignored
    assert np.array_equal(decompression_block(tag, stored).astype(np.int64), ref_decode(tag, stored))
    # every 16-bit field under both band tags
    v = np.arange(1 << 16, dtype=np.uint32)
    for t in range(4):
        got = decompression_block(np.full(v.size, t, np.uint8), v)
        assert got.dtype == np.uint32 and np.array_equal(got.astype(np.int64), ref_decode(t, v))
    # broadcasting and plain int tags behave as before
    assert np.array_equal(decompression_block(np.array([1, 2], np.int64), np.uint32(0x85)).astype(np.int64),
                          ref_decode([1, 2], 0x85))
    with pytest.raises(ValueError):
        decompression_block([4], [0])


# --- groups --------------------------------------------------------------------------

SIZES = [1, 7, 8, 9, 63, 365, 8 * decompression_unit_mod._WALK_GROUPS - 1, 8 * decompression_unit_mod._WALK_GROUPS + 9, 2240,
         8 * compression_block_mod.GROUP_CHUNK + 13]


@pytest.mark.parametrize("k", [1, 2, 5, 7, 8, 10, 16, 23, 24, 31, 32, 64, 100, 126])
def test_pack_unpack_groups_match_reference(k):
    for n in SIZES:
        bits = random_bits(n, "normal" if n % 2 else "uniform")
        buf = pack_groups(bits, k)
        assert buf == ref_pack(bits, k)
        got = unpack_groups(buf, n)
        want = ref_unpack(buf, n)
        assert got[0].dtype == np.uint32 and np.array_equal(got[0].astype(np.int64), want[0])
        assert got[1:] == want[1:] == (len(buf), True)


def test_unpack_groups_damaged_streams():
    for n in [1, 9, 100, 8 * decompression_unit_mod._WALK_GROUPS + 5, 5000]:
        bits = random_bits(n, "normal")
        buf = pack_groups(bits, 9)
        streams = [buf[:len(buf) // 2], buf[:-1], buf + b"\x01\x02\x03", b"", b"\xff" * 7,
                   RNG.integers(0, 256, len(buf), dtype=np.uint8).tobytes(),
                   RNG.integers(0, 256, 40 * n, dtype=np.uint8).tobytes()]
        for stream in streams:
            for count in (n, n + 11, n // 2):
                got = unpack_groups(stream, count)
                want = ref_unpack(stream, count)
                assert np.array_equal(got[0].astype(np.int64), want[0])
                assert got[1:] == want[1:]


def test_unpack_groups_zero_and_bytearray():
    assert unpack_groups(b"", 0)[1:] == (0, True)
    buf = pack_groups(random_bits(50, "normal"), 10)
    a, b = unpack_groups(bytearray(buf), 50), unpack_groups(buf, 50)
    assert np.array_equal(a[0], b[0]) and a[1:] == b[1:]


# --- payload -------------------------------------------------------------------------

def test_payload_one_pass_matches_separate_calls():
    for length in list(range(0, 41)) + [1448, 1461, 8960, 8963]:
        data = RNG.normal(0, 1e-3, -(-length // 4)).astype(np.float32).tobytes()[:length]
        for k in (1, 10, 126):
            comp, dec = payload.compress_payload_with_decoded(data, k)
            assert comp == compress_payload(data, k)
            assert dec == decoded_payload(data, k)
            n = length // 4
            assert comp[4:4 + len(comp) - 4 - length % 4] == ref_pack(
                np.frombuffer(data[:4 * n], "<u4").astype(np.uint32), k)
            back, bad = decompress_payload(comp)
            assert back == dec and not bad


def test_every_tag_word():
    """All 65536 tag words in one stream (k = 10): every group layout is packed and found."""
    words = np.arange(1 << 16, dtype=np.uint32)
    tags = (words[:, None] >> (2 * np.arange(8, dtype=np.uint32))) & np.uint32(3)
    # exponents per tag at k = 10: zero < 117 <= 8-bit < 122 <= 16-bit < 127 <= raw
    lo = np.array([0, 117, 122, 127], np.uint32)[tags]
    hi = np.array([117, 122, 127, 256], np.uint32)[tags]
    exp = lo + (RNG.integers(0, 1 << 16, tags.shape, dtype=np.uint32) % (hi - lo))
    bits = ((RNG.integers(0, 2, tags.shape, dtype=np.uint32) << np.uint32(31)) | (exp << np.uint32(23))
            | RNG.integers(0, 1 << 23, tags.shape, dtype=np.uint32)).ravel()
    assert np.array_equal(compression_block(bits, 10)[0].reshape(tags.shape), tags)
    buf = pack_groups(bits, 10)
    assert buf == ref_pack(bits, 10)
    got, want = unpack_groups(buf, bits.size), ref_unpack(buf, bits.size)
    assert np.array_equal(got[0].astype(np.int64), want[0]) and got[1:] == want[1:]
