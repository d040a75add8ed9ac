"""The golden model's public entries under arguments of any type and size: each returns
or raises ValueError with a message (never TypeError, MemoryError or a silent
conversion), and a count that its buffer cannot hold is refused before anything is
allocated for it."""

import tracemalloc

import numpy as np
import pytest
from fuzzing import fuzz_settings
from hypothesis import example, given
from hypothesis import strategies as st

from inceptionn import golden
from inceptionn.golden import fast

BUF = golden.encode(np.linspace(-1, 1, 100, dtype=np.float32), 10)   # 100 values' groups


def _returns_or_value_error(fn, *args, **kw):
    try:
        return fn(*args, **kw)
    except ValueError as e:
        assert str(e), (fn, args, kw)
        return None


@pytest.mark.parametrize("frame", [1500, 10**8, "text", None, 3.5, [1, 2, 3], {"a": 1}])
def test_frames_must_be_bytes_like(frame):
    for fn in (golden.tx_frame, golden.rx_frame):
        with pytest.raises(ValueError, match="frame must be bytes-like"):
            fn(frame)


@pytest.mark.parametrize("frame", [bytes(60), bytearray(60), memoryview(bytes(60)),
                                   np.zeros(60, np.uint8)])
def test_bytes_like_frames_are_taken(frame):
    assert golden.tx_frame(frame) == bytes(60)
    assert golden.rx_frame(frame) == (bytes(60), False)


@pytest.mark.parametrize("flag", ["no", "", 2, -1, 0.0, None, [True]])
@pytest.mark.parametrize("name", ["enable", "tuser"])
def test_flags_must_be_booleans(name, flag):
    for fn in (golden.tx_frame, golden.rx_frame):
        with pytest.raises(ValueError, match=f"{name} must be a boolean"):
            fn(bytes(60), **{name: flag})


def test_flags_take_numpy_booleans_and_0_or_1():
    for flag in (np.True_, np.False_, 0, 1, True, False):
        golden.tx_frame(bytes(60), enable=flag, tuser=flag)


@pytest.mark.parametrize("n", [2**40, 2**27, 8 * (len(BUF) // 2) + 1])
def test_decode_refuses_a_count_past_its_buffer_before_allocating(n):
    fast.fast_unpack_groups(BUF, 100, 10, "bounded")      # compiled before the count starts
    tracemalloc.start()
    try:
        for fn, args in ((golden.decode, (BUF, n, 10)),
                         (fast.fast_unpack_groups, (BUF, n, 10, "bounded"))):
            with pytest.raises(ValueError, match="cannot fit"):
                fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, peak            # 2^27 values would be 512 MiB


@pytest.mark.parametrize("n", ["5", 5.0, None, True, -1, [5]])
def test_decode_counts_must_be_integers(n):
    with pytest.raises(ValueError, match="n must be"):
        golden.decode(BUF, n, 10)


@pytest.mark.parametrize("buf", [100, "text", None, 2.5])
def test_decode_buffers_must_be_bytes_like(buf):
    with pytest.raises(ValueError, match="buf must be bytes-like"):
        golden.decode(buf, 8, 10)


_any = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                 st.text(max_size=5), st.binary(max_size=80), st.lists(st.integers(0, 300), max_size=5))


@fuzz_settings(150)
@given(frame=_any, k=_any, dscp=_any, enable=_any, codec=_any)
@example(frame=1500, k=10, dscp=10, enable=True, codec="bounded")
@example(frame=b"\0" * 60, k=10, dscp=10, enable="no", codec="bounded")
def test_tx_and_rx_take_anything_as_value_errors(frame, k, dscp, enable, codec):
    _returns_or_value_error(golden.tx_frame, frame, k=k, dscp=dscp, enable=enable, codec=codec)
    _returns_or_value_error(golden.rx_frame, frame, dscp=dscp, enable=enable)


@fuzz_settings(150)
@given(buf=st.one_of(st.binary(max_size=300), _any), n=_any, k=_any,
       codec=st.sampled_from(["bounded", "paper", "other"]))
@example(buf=BUF, n=2**40, k=10, codec="bounded")
@example(buf=BUF, n=2**27, k=10, codec="bounded")
def test_decode_takes_anything_as_value_errors(buf, n, k, codec):
    _returns_or_value_error(golden.decode, buf, n, k, codec)


@fuzz_settings(100)
@given(x=st.one_of(_any, st.lists(st.floats(width=32), max_size=20).map(
    lambda v: np.array(v, np.float32))), k=_any, codec=_any)
def test_encode_and_roundtrip_take_anything_as_value_errors(x, k, codec):
    _returns_or_value_error(golden.encode, x, k, codec)
    _returns_or_value_error(golden.roundtrip, x, k, codec)
    _returns_or_value_error(golden.parse_error_bound, x)
