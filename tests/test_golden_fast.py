"""golden.fast (compiled) against the NumPy model it replaces, byte for byte."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inceptionn import golden
from inceptionn.golden import fast
from inceptionn.golden.payload import _compress

SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x00000001, 0x807FFFFF,
                    0x3F800000, 0x3A800000, 0x3A7FFFFF, 0x38000000, 0x33800000], np.uint32)


def _mixed(rng, n):
    """Gradients of several scales, random bit patterns and the special values."""
    parts = [rng.normal(0, 1e-3, n).astype(np.float32).view(np.uint32),
             rng.normal(0, 0.3, n).astype(np.float32).view(np.uint32),
             rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32),
             np.resize(SPECIAL, n)]
    x = np.concatenate(parts)
    rng.shuffle(x)
    return x[:n]


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 300), k=st.integers(1, 126), seed=st.integers(0, 2**32 - 1),
       tail=st.integers(0, 3))
def test_payload_codec_matches_the_model(n, k, seed, tail):
    rng = np.random.default_rng(seed)
    payload = _mixed(rng, n).tobytes() + rng.bytes(tail)
    assert fast.compress_with_decoded(payload, k) == _compress(payload, k, True)
    comp = golden.compress_payload(payload, k)
    assert fast.compress_payload(payload, k) == comp
    assert fast.decompress_payload(comp) == golden.decompress_payload(comp) == (
        golden.decoded_payload(payload, k), False)


@pytest.mark.parametrize("k", [6, 8, 10])
def test_large_and_maximum_payloads(k):
    rng = np.random.default_rng(k)
    for size in (8936, 8937, golden.MAX_PAYLOAD):
        payload = _mixed(rng, size // 4).tobytes() + rng.bytes(size % 4)
        comp = fast.compress_payload(payload, k)
        assert comp == golden.compress_payload(payload, k)
        assert fast.decompress_payload(comp) == golden.decompress_payload(comp)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 200), k=st.integers(1, 126), seed=st.integers(0, 2**32 - 1))
def test_groups_match_the_model(n, k, seed):
    bits = _mixed(np.random.default_rng(seed), n)
    buf = golden.pack_groups(bits, k)
    assert fast.pack_groups(bits, k) == buf
    for cut in (buf, buf[:len(buf) // 2], buf + b"\x07\x00"):
        want, got = golden.unpack_groups(cut, n), fast.unpack_groups(cut, n)
        assert np.array_equal(got[0], want[0]) and got[1:] == want[1:]


@settings(max_examples=80, deadline=None)
@given(comp=st.binary(min_size=4, max_size=120), length=st.integers(0, 400))
def test_malformed_payloads_give_what_the_model_gives(comp, length):
    comp = length.to_bytes(2, "big") + bytes([golden.SHIM_MAGIC, 10]) + comp[4:]
    assert fast.decompress_payload(comp) == golden.decompress_payload(comp)


def test_errors_are_the_models():
    with pytest.raises(ValueError, match="magic"):
        fast.decompress_payload(b"\x00\x08\xc4\x0a" + bytes(8))
    with pytest.raises(ValueError, match="shim"):
        fast.decompress_payload(b"\x00\x08")
    with pytest.raises(ValueError, match="k"):
        fast.compress_payload(b"\x00" * 8, 0)
    with pytest.raises(ValueError, match="16-bit shim"):
        fast.compress_payload(bytes(golden.MAX_PAYLOAD + 1), 10)
    with pytest.raises(ValueError):
        fast.unpack_groups(b"", -1)


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=200), start=st.integers(0, 0xFFFF))
def test_ones_sum(data, start):
    assert fast.ones_sum(data, start) == golden.ones_sum(data, start)


def test_frames_through_the_fast_codec_equal_the_model():
    from inceptionn.drivers.frames import gradient_frames
    rng = np.random.default_rng(5)
    x = _mixed(rng, 40_000).view(np.float32)
    for mss in (1448, 8936, 1001):
        for f in gradient_frames(x, mss=mss):
            for k in (6, 10):
                w = golden.tx_frame(f, k=k)
                assert golden.tx_frame(f, k=k, codec=fast.FAST) == w
                assert golden.rx_frame(w, codec=fast.FAST) == golden.rx_frame(w)
