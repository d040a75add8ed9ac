"""golden.fast_keep: one pass that encodes, keeps what decodes and adds the coding error,
against the separate steps (the codec's encode, decode, the product by 2^s, the
error-feedback record); and LossRecorder taking that pass."""

import threading

import numpy as np
import pytest

from inceptionn.drivers.collectives.codecs import SCALE_MIN, ScaledCodec, WireCodec, _times_2_to
from inceptionn.drivers.collectives.memory import LossRecorder
from inceptionn.golden import fast, fast_keep

# Every float class: zeros of both signs, subnormals, the band edges at every k, 1 and
# above (raw), the largest finite, infinities, quiet and signalling NaNs, random bits.
_EDGES = np.array([0.0, -0.0, 1e-45, -1e-40, 2.0 ** -126, 2.0 ** -16, 2.0 ** -15, 2.0 ** -8,
                   2.0 ** -7, 0.5, 0.99999994, 1.0, -1.0, 2.0, 3e38, -3.4028235e38,
                   np.inf, -np.inf, np.nan], np.float32)


def _values(n, seed):
    rng = np.random.default_rng(seed)
    v = (rng.normal(0, 1e-3, n) * 2.0 ** rng.integers(-20, 12, n)).astype(np.float32)
    at = rng.integers(0, n, max(1, n // 8))
    v[at] = _EDGES[rng.integers(0, _EDGES.size, at.size)]
    b = v.view(np.uint32)
    b[rng.integers(0, n, max(1, n // 50))] = 0x7F800001             # a signalling NaN
    b[rng.integers(0, n, max(1, n // 20))] = rng.integers(0, 2 ** 32, max(1, n // 20),
                                                          dtype=np.uint64).astype(np.uint32)
    return v


def _separate(x, k, codec, s):
    """(bytes, decoded, error with non-finite -> 0) by the codec's own steps."""
    c = WireCodec(codec, k)
    if s is None:
        body = c.encode(x)
        dec = c.decode(body, x.size)
    else:
        body = c.encode(_times_2_to(x, -s))
        dec = _times_2_to(c.decode(body, x.size), s)
    with np.errstate(invalid="ignore", over="ignore"):
        err = x - dec
    return body, dec, np.nan_to_num(err, nan=0.0, posinf=0.0, neginf=0.0)


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


CASES = [("bounded", k, s) for k in range(1, 17) for s in (None, -126, -40, 0, 9, 126)] + \
    [("paper", k, None) for k in range(1, 17)]


@pytest.mark.parametrize("codec,k,s", CASES)
def test_one_pass_equals_the_separate_steps(codec, k, s):
    for n in (1, 7, 8, 1023, 1024, 1030, 3000):
        x = _values(n, seed=n * 31 + k)
        body, dec, err = _separate(x, k, codec, s)
        loss0 = np.random.default_rng(n).normal(0, 1, n).astype(np.float32)
        kept, loss = x.copy(), loss0.copy()
        out = np.empty(fast.pack_room(n), np.uint8)
        m = fast_keep.encode_keep_into(kept, out, k, codec, scale=s, loss=loss, keep=True)
        assert out[:m].tobytes() == body, (n, "bytes")
        assert np.array_equal(_bits(kept), _bits(dec)), (n, "kept values")
        assert np.array_equal(_bits(loss), _bits(loss0 + err)), (n, "loss")
        # Without keep the values stay; without a loss only the bytes (and keep) count.
        y = x.copy()
        assert fast_keep.encode_keep_into(y, out, k, codec, scale=s, loss=None) == m
        assert out[:m].tobytes() == body and np.array_equal(_bits(y), _bits(x))


def test_bad_arguments_are_refused():
    x = np.zeros(16, np.float32)
    out = np.empty(fast.pack_room(16), np.uint8)
    with pytest.raises(ValueError, match="scale"):
        fast_keep.encode_keep_into(x, out, 10, scale=127)
    with pytest.raises(ValueError, match="out"):
        fast_keep.encode_keep_into(x, out[:10], 10)
    with pytest.raises(ValueError, match="loss"):
        fast_keep.encode_keep_into(x, out, 10, loss=np.zeros(15, np.float32))
    with pytest.raises(ValueError, match="values"):
        fast_keep.encode_keep_into(x.astype(np.float64), out, 10)
    ro = x.copy()
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        fast_keep.encode_keep_into(ro, out, 10, keep=True)
    with pytest.raises(ValueError, match="k"):
        fast_keep.encode_keep_into(x, out, 17)
    assert fast_keep.encode_keep_into(np.zeros(0, np.float32), out, 10) == 0


class _Plain:
    """A codec's encode and decode only: LossRecorder then takes the separate steps."""

    def __init__(self, codec):
        self.codec, self.name, self.k = codec, codec.name, getattr(codec, "k", None)

    def encode(self, values):
        return self.codec.encode(values)

    def decode(self, buf, n):
        return self.codec.decode(buf, n)


@pytest.mark.parametrize("codec", [WireCodec("bounded", 10), WireCodec("paper", 8),
                                   ScaledCodec(10), ScaledCodec(6, share=0.5)],
                         ids=["bounded", "paper", "scaled", "scaled-half"])
def test_recorder_in_one_pass_equals_the_separate_steps(codec):
    x0 = _values(5000, seed=3)
    # A chunk whose s (its octaves + k) lies past the limits: the separate steps code it.
    x0[1000:2000] = (np.random.default_rng(4).normal(0, 1, 1000) * 2.0 ** 122).astype(np.float32)
    runs = {}
    for name, rec in (("one pass", LossRecorder(codec)), ("steps", LossRecorder(_Plain(codec)))):
        x = x0.copy()
        rec.start(x)
        bodies = [rec.encode(x[:1000]), rec.encode_keep(x[1000:2000]),
                  rec.encode_keep(x[2000:4999]), rec.encode(x[4999:])]
        runs[name] = bodies, x, rec.stop()
    (b1, x1, l1), (b2, x2, l2) = runs["one pass"], runs["steps"]
    assert b1 == b2
    assert np.array_equal(_bits(x1), _bits(x2)) and np.array_equal(_bits(l1), _bits(l2))
    assert not np.array_equal(_bits(l1), _bits(np.zeros_like(l1)))
    if isinstance(codec, ScaledCodec):          # the chunk past the limits took the steps
        assert b1[1][0] + SCALE_MIN > fast_keep.SCALE_LIMITS[1]
    # Not recording: encode_keep still keeps, encode leaves the values alone.
    rec, x = LossRecorder(codec), x0.copy()
    body = rec.encode_keep(x[:1000])
    assert body == b2[0]
    assert np.array_equal(_bits(x[:1000]), _bits(codec.decode(body, 1000)))


def test_overlapping_spans_wait_for_each_other():
    rec = LossRecorder(WireCodec("bounded", 10))
    order, entered = [], threading.Event()
    release = threading.Event()

    def first():
        with rec._span(0, 100):
            order.append("first in")
            entered.set()
            release.wait(5)
            order.append("first out")

    def second(lo, hi, tag):
        entered.wait(5)
        with rec._span(lo, hi - lo):
            order.append(tag)

    t1 = threading.Thread(target=first)
    t2 = threading.Thread(target=second, args=(50, 150, "overlapping"))
    t3 = threading.Thread(target=second, args=(100, 200, "beside"))
    t1.start()
    t2.start()
    t3.start()
    t3.join(5)
    assert order == ["first in", "beside"]       # a span beside it goes on at once
    release.set()
    t1.join(5)
    t2.join(5)
    assert order == ["first in", "beside", "first out", "overlapping"]


@pytest.mark.parametrize("codec", ["bounded", "paper"])
def test_float_decode_equals_the_integer_form(codec):
    """The pass decodes each value in float32 arithmetic (fast_keep._decoded); the codec's
    unpack decodes its stored field by integers (fast_blocks._decode_lane). Every bit
    pattern class, every k: the same bits."""
    from numba import njit
    from inceptionn.golden.fast_blocks import _decode_lane, _field, dec_consts, enc_consts

    @njit
    def both(bits, t, mlim, w8, mul, add, d8, d16):
        a = np.empty(bits.size, np.uint32)
        b = np.empty(bits.size, np.uint32)
        w8f, w16f = np.float32(2.0 ** np.int64(w8)), np.float32(2.0 ** 15)
        mulf, addf = np.float32(np.int64(mul)), np.float32(np.int64(add))
        for i in range(bits.size):
            fv, wd = _field(bits[i], t, mlim, w8)
            a[i] = _decode_lane(wd - (wd >> np.uint32(2)), fv, mul, add, d8, d16)
            b[i] = fast_keep._decoded(bits[i], t, mlim, w8f, w16f, mulf, addf, d8, d16)
        return a, b

    rng = np.random.default_rng(7)
    # Every exponent with random mantissas and signs, and plain random words.
    exps = np.repeat(np.arange(256, dtype=np.uint32), 512)
    bits = (exps << np.uint32(23)) | rng.integers(0, 2 ** 23, exps.size).astype(np.uint32)
    bits |= rng.integers(0, 2, exps.size).astype(np.uint32) << np.uint32(31)
    bits = np.concatenate([bits, _bits(_EDGES),
                           rng.integers(0, 2 ** 32, 1 << 16, dtype=np.uint64).astype(np.uint32)])
    for k in range(1, 17):
        a, b = both(bits, *enc_consts(k, codec), *dec_consts(k, codec))
        bad = np.flatnonzero(a != b)
        assert bad.size == 0, (k, [hex(int(v)) for v in bits[bad[:4]]])


@pytest.mark.parametrize("divide_by", [2, 3, 4])
def test_the_kept_values_divided_are_the_later_division(divide_by):
    """keep with divide_by (a ring keeping its mean): the kept values are what decodes,
    divided in float32, as dividing them afterwards gives; bytes and loss unchanged."""
    x = _values(3000, seed=divide_by)
    for s in (None, -40, 9):
        a, b = x.copy(), x.copy()
        la, lb = np.zeros(x.size, np.float32), np.zeros(x.size, np.float32)
        out_a, out_b = (np.empty(fast.pack_room(x.size), np.uint8) for _ in range(2))
        na = fast_keep.encode_keep_into(a, out_a, 10, scale=s, loss=la, keep=True)
        nb = fast_keep.encode_keep_into(b, out_b, 10, scale=s, loss=lb, keep=True,
                                        divide_by=divide_by)
        with np.errstate(all="ignore"):
            want = a / np.float32(divide_by)
        assert out_a[:na].tobytes() == out_b[:nb].tobytes()
        assert np.array_equal(_bits(la), _bits(lb))
        assert np.array_equal(_bits(b), _bits(want))
    with pytest.raises(ValueError, match="divide_by"):
        fast_keep.encode_keep_into(x, out_a, 10, keep=True, divide_by=0)
