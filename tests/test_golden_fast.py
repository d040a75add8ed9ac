"""golden.fast (compiled) against the NumPy model it replaces: byte for byte, and the same
exception class wherever the model raises, for both value codecs (wire versions 1 and 2)."""

import numbers

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from inceptionn import golden
from inceptionn.golden import fast
from inceptionn.golden.payload import compress_payload_with_decoded
from inceptionn.golden.wire import GROUP_VALUES

# Zeros, infinities, NaNs (quiet, signalling, with payload), denormals, 1.0, the edges
# of the 8- and 16-bit bands at k = 10 and the largest finite floats.
SPECIAL = np.array([0, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00001, 0x7F800001,
                    0x00000001, 0x807FFFFF, 0x3F800000, 0x3A800000, 0x3A7FFFFF, 0x3D000000,
                    0x3CFFFFFF, 0x38000000, 0x33800000, 0x7F7FFFFF, 0xFF7FFFFF], np.uint32)
# Every sign and exponent (the index of the encoder's tables) with 4 mantissas each.
EVERY_EXPONENT = (np.arange(512, dtype=np.uint32)[:, None] << np.uint32(23)
                  | np.array([0, 1, 0x400000, 0x7FFFFF], np.uint32)).reshape(-1)

_as_bits = st.floats(width=32).map(lambda x: int(np.float32(x).view(np.uint32)))
bit_patterns = st.one_of(st.integers(0, 2**32 - 1), st.sampled_from(SPECIAL.tolist()), _as_bits)
values = st.lists(bit_patterns, max_size=100).map(lambda v: np.array(v, np.uint32))


def _norm(r):
    """A result in a form == compares exactly: types, dtypes and bytes included."""
    if isinstance(r, tuple):
        return tuple(_norm(x) for x in r)
    if isinstance(r, np.ndarray):
        return ("ndarray", r.dtype.str, r.shape, r.tobytes())
    return (type(r).__name__, r)


def outcome(fn, *args):
    try:
        return ("returns", _norm(fn(*args)))
    except Exception as e:  # noqa: BLE001 - the class is what is compared
        return ("raises", type(e).__name__)


def same(model, compiled, *args, must_return=True):
    """The compiled function gives what the model gives, or raises the same class."""
    want = outcome(model, *args)
    assert outcome(compiled, *args) == want, args
    if must_return:
        assert want[0] == "returns", want
    return want


CODECS = ("paper", "bounded")
K_MAX = {"paper": golden.K_MAX, "bounded": golden.EB_K_MAX}
codec_and_k = st.sampled_from(CODECS).flatmap(
    lambda c: st.tuples(st.just(c), st.integers(1, K_MAX[c])))


def check_payload(payload, k, codec="paper"):
    """Compress (with and without D) and decompress, against the model."""
    same(golden.compress_payload, fast.fast_compress_payload, payload, k, codec)
    same(compress_payload_with_decoded, fast.fast_compress_payload_with_decoded, payload, k, codec)
    comp = golden.compress_payload(payload, k, codec)
    got = fast.fast_decompress_payload(comp)
    assert got == golden.decompress_payload(comp) == (golden.decoded_payload(payload, k, codec), False)


def same_unpack(buf, n, k, codec, must_return=True):
    """fast_unpack_groups gives what golden.unpack_groups gives, except for a count past
    what buf can hold: the model decodes the missing groups as zeros (ok False), the
    compiled entry refuses it before allocating (a ValueError)."""
    try:
        size = len(bytes(buf))
    except (TypeError, ValueError):
        size = None
    if (size is not None and isinstance(n, numbers.Integral) and n > 0
            and n > GROUP_VALUES * (size // 2) and codec in golden.CODECS
            and outcome(golden.unpack_groups, buf, n, k, codec)[0] == "returns"):
        assert golden.unpack_groups(buf, n, k, codec)[2] is False
        with pytest.raises(ValueError, match="cannot fit"):
            fast.fast_unpack_groups(buf, n, k, codec)
        return
    same(golden.unpack_groups, fast.fast_unpack_groups, buf, n, k, codec, must_return=must_return)


def check_groups(bits, k, codec="paper"):
    """Pack, then unpack the groups whole, cut short and with bytes left over."""
    same(golden.pack_groups, fast.fast_pack_groups, bits, k, codec)
    buf = golden.pack_groups(bits, k, codec)
    for cut in (buf, buf[:len(buf) // 2], buf[:-1], buf + b"\x07\x00\xff"):
        same_unpack(cut, bits.size, k, codec)


def _gradients(rng, n):
    return rng.normal(0.0, 1e-3, n).astype(np.float32).view(np.uint32)


@settings(max_examples=120, deadline=None)
@given(bits=values, ck=codec_and_k, tail=st.binary(max_size=3))
def test_payloads_of_any_bit_patterns(bits, ck, tail):
    check_payload(bits.tobytes() + tail, ck[1], ck[0])


@settings(max_examples=120, deadline=None)
@given(bits=values, ck=codec_and_k)
def test_groups_of_any_bit_patterns(bits, ck):
    check_groups(bits, ck[1], ck[0])


@pytest.mark.parametrize("codec,k", [("paper", k) for k in range(golden.K_MIN, golden.K_MAX + 1)]
                         + [("bounded", k) for k in range(golden.EB_K_MIN, golden.EB_K_MAX + 1)])
def test_every_k_on_every_exponent(codec, k):
    """All 512 rows of the encoder's tables, then short inputs of 0..17 values (not a
    multiple of the group size) with 0..3 tail bytes."""
    rng = np.random.default_rng(k)
    check_groups(EVERY_EXPONENT[:-3], k, codec)
    check_payload(EVERY_EXPONENT.tobytes() + b"\x9a", k, codec)
    for n in range(18):
        bits = rng.choice(np.concatenate([SPECIAL, _gradients(rng, 32)]), n)
        check_groups(bits, k, codec)
        check_payload(bits.tobytes() + rng.bytes(n % 4), k, codec)


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("k", [6, 10, 16])
def test_gradients_and_payload_sizes(k, codec):
    """Real-ish gradients, N(0, 1e-3): empty, short, jumbo-segment and maximum payloads."""
    rng = np.random.default_rng(k)
    for size in (0, 1, 3, 4, 5, 31, 32, 33, 1448, 8936, 8937, 65532, golden.MAX_PAYLOAD):
        check_payload(_gradients(rng, size // 4).tobytes() + rng.bytes(size % 4), k, codec)
    check_groups(_gradients(rng, 100_003), k, codec)  # long streams: the model's other unpacker


def test_payload_past_the_16_bit_shim_is_refused():
    for codec in CODECS:
        for k in (10, 0):
            assert same(golden.compress_payload, fast.fast_compress_payload,
                        bytes(golden.MAX_PAYLOAD + 1), k, codec, must_return=False)[0] == "raises"


@settings(max_examples=200, deadline=None)
@given(bits=values, ck=codec_and_k, tail=st.binary(max_size=3), data=st.data())
def test_damaged_payloads_give_what_the_model_gives(bits, ck, tail, data):
    """Truncated groups, bytes left over, a changed byte (the shim's included: version,
    k), a lying L: the same (D, bad), or the same exception."""
    codec, k = ck
    comp = golden.compress_payload(bits.tobytes() + tail, k, codec)
    cut = data.draw(st.integers(4, len(comp)))
    extra = data.draw(st.binary(max_size=40))
    length = data.draw(st.integers(0, golden.MAX_PAYLOAD))
    flipped = bytearray(comp)
    flipped[data.draw(st.integers(0, len(comp) - 1))] ^= data.draw(st.integers(1, 255))
    for bad in (comp[:cut], comp + extra, comp[:cut] + extra, bytes(flipped),
                length.to_bytes(2, "big") + comp[2:]):
        same(golden.decompress_payload, fast.fast_decompress_payload, bad, must_return=False)


@settings(max_examples=150, deadline=None)
@given(stream=st.binary(max_size=200), length=st.integers(0, golden.MAX_PAYLOAD),
       shim=st.sampled_from([(golden.SHIM_MAGIC, 10), (golden.SHIM_MAGIC_V2, 10),
                             (golden.SHIM_MAGIC_V2, 1), (golden.SHIM_MAGIC_V2, 16)]))
def test_random_streams_give_what_the_model_gives(stream, length, shim):
    comp = length.to_bytes(2, "big") + bytes(shim) + stream
    same(golden.decompress_payload, fast.fast_decompress_payload, comp)


@settings(max_examples=80, deadline=None)
@given(buf=st.binary(max_size=300), n=st.integers(0, 3000), ck=codec_and_k)
def test_unpack_any_bytes(buf, n, ck):
    """Long counts over short buffers: groups past the end, both of the model's unpackers."""
    same_unpack(buf, n, ck[1], ck[0])


@pytest.mark.parametrize("comp", [b"", b"\x00", b"\x00\x08\xc5", b"\x00\x08\xc4\x0a" + bytes(8),
                                  b"\x00\x00\x00\x00", bytearray(b"\x00\x01\xc5\x0a\x05"),
                                  b"\x00\x08\xc6\x00" + bytes(8), b"\x00\x08\xc6\x11" + bytes(8),
                                  b"\x00\x08\xc6\x7e" + bytes(8), b"\x00\x08\xc7\x0a" + bytes(8),
                                  b"\x00\x08\xc6",
                                  "text", None, 12, [0, 4, 0xC5, 10, 0, 0]])
def test_bad_shims_and_inputs_raise_what_the_model_raises(comp):
    same(golden.decompress_payload, fast.fast_decompress_payload, comp, must_return=False)


@pytest.mark.parametrize("payload", [b"", b"\x01\x02\x03", bytes(9), bytearray(b"\x00\x00\x80\x3f\x07"),
                                     memoryview(b"\x00\x00\x80\x3f\x07\x08"), "text", None, 5,
                                     [1, 2, 3, 4, 5]])
@pytest.mark.parametrize("k", [10, 1, 16, 17, 126, 0, 127, -3, True, 10.0, "10", None, np.int64(7)])
@pytest.mark.parametrize("codec", ["paper", "bounded", "eb", None, 2])
def test_payload_arguments_are_checked_as_the_model_does(payload, k, codec):
    same(golden.compress_payload, fast.fast_compress_payload, payload, k, codec, must_return=False)
    same(compress_payload_with_decoded, fast.fast_compress_payload_with_decoded, payload, k, codec,
         must_return=False)


_BITS_ARGS = [[], np.zeros(0, np.uint32), [1, 2, 3], [0x3F800000] * 9, [-1], [2**32], np.zeros(0, np.float32),
              np.ones(3, np.float32), np.arange(20, dtype=np.int64).reshape(4, 5),
              np.arange(20, dtype=">u4"), np.arange(40, dtype=np.uint32)[::3],
              np.array([True, False]), b"\x00\x00\x80\x3f", "abc", None, 7]


@pytest.mark.parametrize("bits", _BITS_ARGS, ids=range(len(_BITS_ARGS)))
@pytest.mark.parametrize("k", [10, 0, 17, 127, 2.5, None])
@pytest.mark.parametrize("codec", ["paper", "bounded", "Bounded"])
def test_pack_arguments_are_checked_as_the_model_does(bits, k, codec):
    same(golden.pack_groups, fast.fast_pack_groups, bits, k, codec, must_return=False)


@pytest.mark.parametrize("buf", [b"\x01\x00\x10", bytearray(b"\x55\x55" + bytes(20)),
                                 memoryview(b"\xff\xff" + bytes(40)), np.arange(30, dtype=np.uint8),
                                 [3, 0, 1, 2, 3], 4, "text", None])
@pytest.mark.parametrize("n", [0, 1, 8, 9, 200, -1, True, 8.0, np.int32(5), None])
@pytest.mark.parametrize("codec,k", [("paper", None), ("paper", 10), ("bounded", 10), ("bounded", None),
                                     ("bounded", 17), ("bounded", 0), ("other", 10)])
def test_unpack_arguments_are_checked_as_the_model_does(buf, n, codec, k):
    same_unpack(buf, n, k, codec, must_return=False)


def test_errors_are_the_models_own():
    """The checks are the model's validators: the messages are the same too."""
    cases = [(golden.decompress_payload, fast.fast_decompress_payload, (b"\x00\x08\xc4\x0a",)),
             (golden.decompress_payload, fast.fast_decompress_payload, (b"\x00\x08",)),
             (golden.compress_payload, fast.fast_compress_payload, (bytes(8), 0)),
             (golden.compress_payload, fast.fast_compress_payload, (bytes(golden.MAX_PAYLOAD + 1), 9)),
             (golden.decompress_payload, fast.fast_decompress_payload, (b"\x00\x08\xc6\x11",)),
             (golden.compress_payload, fast.fast_compress_payload, (bytes(8), 17, "bounded")),
             (golden.compress_payload, fast.fast_compress_payload, (bytes(8), 10, "eb")),
             (golden.pack_groups, fast.fast_pack_groups, ([1], 200)),
             (golden.pack_groups, fast.fast_pack_groups, ([1], 17, "bounded")),
             (golden.pack_groups, fast.fast_pack_groups, (np.ones(2), 10)),
             (golden.unpack_groups, fast.fast_unpack_groups, (b"", 8, None, "bounded")),
             (golden.unpack_groups, fast.fast_unpack_groups, (b"", -1))]
    for model, compiled, args in cases:
        with pytest.raises(ValueError) as want:
            model(*args)
        with pytest.raises(ValueError) as got:
            compiled(*args)
        assert str(got.value) == str(want.value)


def test_exported_from_golden():
    assert golden.fast_compress_payload is fast.fast_compress_payload
    assert golden.fast_decompress_payload is fast.fast_decompress_payload
    assert golden.fast_pack_groups is fast.fast_pack_groups
    assert golden.fast_unpack_groups is fast.fast_unpack_groups
    assert golden.fast_compress_payload_with_decoded is fast.fast_compress_payload_with_decoded


@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=200), start=st.integers(0, 0xFFFF))
def test_ones_sum(data, start):
    assert fast.ones_sum(data, start) == golden.ones_sum(data, start)


def test_frames_through_the_fast_codec_equal_the_model():
    from inceptionn.drivers.tcp_frames import gradient_frames
    rng = np.random.default_rng(5)
    x = np.concatenate([_gradients(rng, 20_000), rng.choice(SPECIAL, 2_000)]).view(np.float32)
    for mss in (1448, 8936, 1001):
        for f in gradient_frames(x, mss=mss):
            for k, codec in ((6, "paper"), (10, "paper"), (6, "bounded"), (10, "bounded"),
                             (16, "bounded")):
                w = golden.tx_frame(f, k=k, codec=codec)
                assert golden.tx_frame(f, k=k, codec=codec, impl=fast.FAST) == w
                assert golden.rx_frame(w, impl=fast.FAST) == golden.rx_frame(w)


@pytest.mark.parametrize("codec", CODECS)
def test_kernels_release_the_gil(codec):
    """Threads run the compiled loops side by side: results are the same as one at a time
    (numba's nogil=True on every kernel; speed is for `make bench`)."""
    from concurrent.futures import ThreadPoolExecutor
    rng = np.random.default_rng(9)
    arrays = [_gradients(rng, 50_000 + i) for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        packed = list(pool.map(lambda a: fast.fast_pack_groups(a, 10, codec), arrays))
        unpacked = list(pool.map(lambda ab: fast.fast_unpack_groups(ab[1], ab[0].size, 10, codec),
                                 zip(arrays, packed)))
    for a, buf, (bits, consumed, ok) in zip(arrays, packed, unpacked):
        assert buf == golden.pack_groups(a, 10, codec)
        assert ok and consumed == len(buf)
        assert bits.tobytes() == golden.unpack_groups(buf, a.size, 10, codec)[0].tobytes()
    for fn in (fast._encode, fast._unpack, fast._ones_sum):
        assert fn.targetoptions.get("nogil"), fn
