"""Groups (spec section 2), compressed payload (section 3) and the byte-stream models of
the AlignmentUnit and DecompressionUnit (the BurstBuffer: test_golden_burst_buffer.py)."""

import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inceptionn import golden
from inceptionn.golden import (alignment_unit, compress_payload, compression_block,
                               compression_unit, decoded_payload, decompress_payload,
                               decompression_unit, pack_groups, shifter_tree, tag_decoder,
                               unpack_groups)

from test_golden_codec import ref_compress, ref_decompress



def ref_pack(bits, k):
    """Groups from the spec's text, one value at a time."""
    out = b""
    for g in range(0, len(bits), 8):
        word, fields = 0, b""
        for i, f in enumerate(bits[g:g + 8]):
            tag, v, w = ref_compress(f, k)
            word |= tag << (2 * i)
            fields += v.to_bytes(4, "little")[:w]
        out += struct.pack("<H", word) + fields
    return out


bits_lists = st.lists(st.integers(0, 2**32 - 1), max_size=70)


@settings(max_examples=120, deadline=None)
@given(bits_lists, st.integers(1, 126))
def test_pack_groups_matches_reference(bits, k):
    arr = np.array(bits, dtype=np.uint32)
    buf = pack_groups(arr, k)
    assert buf == ref_pack(bits, k)
    out, consumed, ok = unpack_groups(buf, len(bits))
    assert ok and consumed == len(buf)
    assert out.tolist() == [ref_decompress(*ref_compress(f, k)[:2]) for f in bits]
    # one group at a time through the CompressionUnit gives the same bytes
    units = b"".join(compression_unit(arr[g:g + 8], k) for g in range(0, len(bits), 8))
    assert units == buf


def test_tag_decoder_all_words():
    lengths = []
    for word in range(1 << 16):
        widths, offsets, length = tag_decoder(word)
        tags = [(word >> (2 * i)) & 3 for i in range(8)]
        assert widths == [[0, 1, 2, 4][t] for t in tags]
        assert offsets[0] == 2
        assert all(offsets[i + 1] == offsets[i] + widths[i] for i in range(7))
        assert length == offsets[7] + widths[7] == 2 + sum(widths)
        lengths.append(length)
    assert min(lengths) == 2 and max(lengths) == 34
    assert golden.group_lengths(np.arange(1 << 16)).tolist() == lengths
    with pytest.raises(ValueError, match="16 bits"):
        tag_decoder(0x10000)


def test_shifter_tree_and_unit_examples():
    stored = np.array([0xAABBCCDD, 0, 0x12, 0x3456, 0, 0x80, 0x7F7FFFFF, 0x7FFF], np.uint32)
    width = np.array([4, 0, 1, 2, 0, 1, 4, 2], np.uint8)
    assert shifter_tree(stored, width) == bytes.fromhex("ddccbbaa" "12" "5634" "80" "ffff7f7f" "ff7f")
    assert shifter_tree(np.zeros(8, np.uint32), np.zeros(8, np.uint8)) == b""
    with pytest.raises(ValueError, match="widths"):
        shifter_tree(np.zeros(2, np.uint32), np.array([3, 0]))
    with pytest.raises(ValueError, match="8"):
        shifter_tree(np.zeros(9, np.uint32), np.zeros(9, np.uint8))
    # 1.0, 0.5, 0, 2^-7 with k = 10: tags 11 10 00 01 -> word 0b01_00_10_11 = 0x4B
    bits = np.array([0x3F800000, 0x3F000000, 0, 0x3C000000], np.uint32)
    assert compression_unit(bits, 10) == bytes.fromhex("4b00" "0000803f" "0040" "01")
    with pytest.raises(ValueError, match="1..8"):
        compression_unit(np.zeros(9, np.uint32), 10)
    with pytest.raises(ValueError, match="1..8"):
        compression_unit(np.zeros(0, np.uint32), 10)


def test_unpack_truncated_extra_and_dirty_tags():
    rng = np.random.default_rng(5)
    bits = rng.normal(0, 0.2, 37).astype(np.float32).view(np.uint32)
    buf = pack_groups(bits, 10)
    good = compression_block(bits, 10)[3]
    for cut in (1, 2, 5, len(buf) - 1):
        out, consumed, ok = unpack_groups(buf[:-cut], 37)
        assert not ok and consumed >= len(buf) - cut
        ref, _, _ = unpack_groups(buf[:-cut] + bytes(cut + 80), 37)   # missing bytes read as zeros
        assert out.tolist() == ref.tolist()
    out, consumed, ok = unpack_groups(buf + b"\x55\x66", 37)
    assert ok and consumed == len(buf) and out.tolist() == good.tolist()
    # Everything missing: every group is a zero tag word, all values +0.0.
    out, consumed, ok = unpack_groups(b"", 20)
    assert out.tolist() == [0] * 20 and consumed == 6 and not ok
    # The last group's missing values have non-zero tags: their bytes are consumed anyway.
    one = compression_unit(np.array([0x3F800000], np.uint32), 10)        # word 0x0003
    dirty = bytes([one[0], one[1] | 0x40]) + one[2:] + b"\x99"          # value 7 tagged 8-bit
    out, consumed, ok = unpack_groups(dirty, 1)
    assert out.tolist() == [0x3F800000] and consumed == len(dirty) and ok
    with pytest.raises(ValueError, match=">= 0"):
        unpack_groups(b"", -1)


def test_decode_errors():
    for codec in ("paper", "bounded"):
        buf = golden.encode(np.ones(9, np.float32), 10, codec)
        with pytest.raises(ValueError, match="run out"):
            golden.decode(buf[:-1], 9, 10, codec)
        with pytest.raises(ValueError, match="left over"):
            golden.decode(buf + b"\0", 9, 10, codec)
    with pytest.raises(ValueError, match="give k"):
        golden.decode(buf, 9)


# ---------------------------------------------------------------- payload

@settings(max_examples=80, deadline=None)
@given(st.binary(max_size=120), st.integers(1, 126))
def test_payload_roundtrip(payload, k):
    comp = compress_payload(payload, k)
    assert comp[:4] == len(payload).to_bytes(2, "big") + bytes([0xC5, k])
    n, r = divmod(len(payload), 4)
    assert comp[len(comp) - r:] == payload[4 * n:] or r == 0
    data, bad = decompress_payload(comp)
    assert not bad and data == decoded_payload(payload, k)
    assert len(data) == len(payload)
    vals = np.frombuffer(payload[:4 * n], "<u4")
    assert data[:4 * n] == compression_block(vals, k)[3].astype("<u4").tobytes()


def test_payload_errors():
    with pytest.raises(ValueError, match="16-bit shim"):
        compress_payload(bytes(65536), 10)
    assert len(compress_payload(bytes(65535), 10)) == 4 + 2 * (65535 // 32 + 1) + 3
    with pytest.raises(ValueError, match="magic"):
        decompress_payload(b"\x00\x08\xC4\x0a" + bytes(4))
    with pytest.raises(ValueError, match="shim"):
        decompress_payload(b"\x00\x08")


def test_decompression_unit_errors():
    x = np.array([0.5, -0.25, 3.0, 0.001, 0.1], np.float32)
    payload = x.tobytes() + b"xy"
    comp = compress_payload(payload, 10)
    stream = comp[4:]
    good, bad = decompression_unit(stream, 5, 2)
    assert not bad and good == decoded_payload(payload, 10)
    # tail missing: zeros, error
    data, bad = decompression_unit(stream[:-1], 5, 2)
    assert bad and data == good[:-1] + b"\0"
    # bytes left over
    data, bad = decompression_unit(stream + b"z", 5, 2)
    assert bad and data == good
    # groups run out: restored length kept, missing bytes zero
    data, bad = decompression_unit(stream[:3], 5, 2)
    assert bad and len(data) == 22
    with pytest.raises(ValueError, match="tail"):
        decompression_unit(stream, 5, 4)


# ---------------------------------------------------------------- stream blocks

@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=36), min_size=1, max_size=20).filter(lambda v: sum(map(len, v))))
def test_alignment_unit(vectors):
    beats = alignment_unit(vectors)
    stream = b"".join(vectors)
    assert len(beats) == -(-len(stream) // 32)
    assert [b[2] for b in beats] == [False] * (len(beats) - 1) + [True]
    got = b""
    for data, keep, last in beats:
        nbytes = bin(keep).count("1")
        assert keep == (1 << nbytes) - 1 and (nbytes == 32 or last)
        assert data[nbytes:] == bytes(32 - nbytes)
        got += data[:nbytes]
    assert got == stream


def test_alignment_unit_errors():
    with pytest.raises(ValueError, match="0..36"):
        alignment_unit([bytes(37)])
    with pytest.raises(ValueError, match="at least one byte"):
        alignment_unit([b"", b""])
