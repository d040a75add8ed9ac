"""The scale-following bound (codecs.ScaledCodec): 2^-s before the bounded codec, 2^s
after, s from the chunk's values and sent in the frame's first byte. Exact scaling,
|error| <= 2^(s-k), the share of values coded, idempotence (a ring forwards decoded
chunks), the frame never past the receiver's limit, and the edge cases: zeros,
subnormals, huge values, inf and NaN, bad frames."""

import numpy as np
import pytest

from inceptionn.drivers.collectives.codecs import (SCALE_MAX, SCALE_MIN, ScaledCodec,
                                                   WireCodec, choose_scale, make_codec)


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def _chunks():
    rng = np.random.default_rng(3)
    yield "normal 1e-6", (rng.standard_normal(5000) * 1e-6).astype(np.float32)
    yield "normal 1e3", (rng.standard_normal(4099) * 1e3).astype(np.float32)
    yield "heavy tail", (rng.standard_t(1.5, 3000) * 1e-4).astype(np.float32)
    yield "subnormals", (rng.standard_normal(1000) * 1e-41).astype(np.float32)
    yield "near max", (rng.uniform(-1, 1, 777) * 3e38).astype(np.float32)
    yield "mixed", np.concatenate([rng.standard_normal(500) * 1e-30,
                                   rng.standard_normal(500) * 1e20]).astype(np.float32)
    yield "one value", np.array([-2.5e-7], np.float32)
    yield "zeros", np.zeros(17, np.float32)
    yield "mostly zeros", np.array([0] * 30 + [1e-3, -4e-9], np.float32)


@pytest.mark.parametrize("k", [4, 10, 16])
@pytest.mark.parametrize("name,x", list(_chunks()), ids=[n for n, _ in _chunks()])
def test_error_within_2_to_the_s_minus_k_and_recoding_changes_nothing(k, name, x):
    c = ScaledCodec(k)
    s = c.scale(x)
    assert SCALE_MIN <= s <= SCALE_MAX
    body = c.encode(x)
    assert body[0] == s - SCALE_MIN
    y = c.decode(body, x.size)
    assert y.dtype == np.float32 and y.shape == x.shape
    assert np.all(np.abs(y.astype(np.float64) - x) <= 2.0 ** (s - k)), name
    # The frame fits the software wire's per-chunk limit (2 tag bytes per 8, 4 per value).
    assert len(body) <= 2 * -(-x.size // 8) + 4 * x.size
    # A decoded chunk picks the same s (unless all of it fell below 2^(SCALE_MIN-k))
    # and codes to the same values, bit for bit.
    assert c.scale(y) == s or not np.any(y)
    assert np.array_equal(_bits(c.roundtrip(y)), _bits(y))


def test_the_scale_puts_a_set_share_in_the_coded_bands():
    rng = np.random.default_rng(0)
    for scale in (1e-9, 1e-3, 1.0, 1e4):
        x = (rng.standard_normal(20000) * scale).astype(np.float32)
        for share in (0.1, 0.25, 0.5):
            c = ScaledCodec(10, share)
            s = c.scale(x)
            coded = np.mean(np.abs(x) >= 2.0 ** (s - 10))
            assert coded >= share, (scale, share, coded)
            # s is the largest such: one more and fewer than the share are coded.
            assert np.mean(np.abs(x) >= 2.0 ** (s + 1 - 10)) < share


def test_the_bound_follows_the_scale_where_the_absolute_one_drops_everything():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(8192) * 1e-5).astype(np.float32)     # all below 2^-10
    absolute, scaled = WireCodec("bounded", 10), ScaledCodec(10)
    assert not np.any(absolute.roundtrip(x))
    y = scaled.roundtrip(x)
    assert np.mean(y != 0) >= 0.25
    assert np.linalg.norm(y - x) < 0.5 * np.linalg.norm(x)
    # Multiplying the chunk by 2^j moves s by j and the decoded values by 2^j exactly.
    for j in (-40, 7, 60):
        xj = np.ldexp(x, j).astype(np.float32)
        assert scaled.scale(xj) == scaled.scale(x) + j
        assert np.array_equal(_bits(scaled.roundtrip(xj)), _bits(np.ldexp(y, j)))


def test_scaling_is_exact_at_both_ends_of_the_range():
    c = ScaledCodec(16)
    tiny = np.array([2.0 ** -149, -(2.0 ** -140), 2.0 ** -127, 0.0], np.float32)
    assert c.scale(tiny) == SCALE_MIN
    y = c.roundtrip(tiny)
    assert np.all(np.abs(y.astype(np.float64) - tiny) <= 2.0 ** (SCALE_MIN - 16))
    big = np.array([3.4e38, -3.0e38, 1e38, 5.0], np.float32)
    y = c.roundtrip(big)
    assert np.all(np.isfinite(y))
    assert np.all(np.abs(y.astype(np.float64) - big) <= 2.0 ** (c.scale(big) - 16))


def test_inf_and_nan_pass_and_do_not_set_the_scale():
    x = np.array([np.inf, -np.inf, np.nan, 1e-4, -3e-4, 2e-4, 5e-5, 0.0], np.float32)
    c = ScaledCodec(10)
    assert c.scale(x) == c.scale(x[3:])
    y = c.roundtrip(x)
    assert y[0] == np.inf and y[1] == -np.inf and np.isnan(y[2])
    assert ScaledCodec(10).scale(np.array([np.nan, np.inf], np.float32)) == 0


def test_bad_frames_and_settings_are_clear_errors():
    c = ScaledCodec(10)
    x = np.linspace(-1e-3, 1e-3, 64, dtype=np.float32)
    body = c.encode(x)
    with pytest.raises(ValueError, match="no scale byte"):
        c.decode(b"", 4)
    # Another scale byte decodes to the same values times a power of two.
    assert np.array_equal(c.decode(bytes([body[0] + 3]) + body[1:], x.size),
                          np.ldexp(c.decode(body, x.size), 3))
    with pytest.raises(ValueError, match="left over"):
        c.decode(body + b"\0", x.size)
    with pytest.raises(ValueError, match="run out"):
        c.decode(body[:-1], x.size)
    for share in (0, 1.5, True, "half"):
        with pytest.raises(ValueError, match="share"):
            ScaledCodec(10, share)
    assert make_codec(c, 10) is c
    assert choose_scale(np.zeros(0, np.float32), 10) == 0


def test_the_fast_scaling_rounds_as_ldexp_at_every_scale():
    from inceptionn.drivers.collectives.codecs import _times_2_to
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.standard_normal(200) * 10.0 ** rng.integers(-44, 38, 200),
                        [0.0, -0.0, np.inf, -np.inf, np.nan, 2.0 ** -149, 3.4e38]])
    v = v.astype(np.float32)
    for s in range(-2 * SCALE_MAX, 2 * SCALE_MAX + 1):
        with np.errstate(over="ignore"):        # past the codec's range, on purpose
            assert np.array_equal(_bits(_times_2_to(v, s)),
                                  _bits(np.ldexp(v, s).astype(np.float32))), s


def _scale_by_sorting(v, k, share):
    """choose_scale's rule written the slow way: the octave of the ceil(share n)-th
    largest finite |v| (n finite values), plus k; the largest value far from overflow."""
    e = (_bits(v) >> 23) & 0xFF
    e = np.sort(e[e != 0xFF])[::-1].astype(int)
    if e.size == 0:
        return 0
    e_m = e[max(1, int(np.ceil(share * e.size))) - 1]
    s = e_m - 127 + k if e_m > 0 else SCALE_MIN
    return min(max(s, e[0] - 127 - 120, SCALE_MIN), SCALE_MAX)


def test_the_octave_histogram_picks_the_sorted_rule_s():
    rng = np.random.default_rng(11)
    for i in range(400):
        n = int(rng.integers(1, 200))
        v = [rng.standard_normal(n) * 10.0 ** rng.integers(-45, 38),
             rng.standard_normal(n) * 10.0 ** rng.integers(-45, 38, n),
             rng.choice([0.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, 1.0], n),
             rng.integers(0, 2 ** 32, n, dtype=np.uint64).astype(np.uint32)
             .view(np.float32)][i % 4]
        with np.errstate(over="ignore"):
            v = np.asarray(v, np.float32)
        for k in (1, 10, 16):
            for share in (0.01, 0.25, 1.0):
                assert choose_scale(v, k, share) == _scale_by_sorting(v, k, share), (i, k, share)


@pytest.mark.parametrize("make", [lambda: ScaledCodec(10), lambda: WireCodec("bounded", 10),
                                  lambda: WireCodec("paper", 8)])
@pytest.mark.parametrize("n", [1, 8, 1001, 1 << 16])
def test_decode_into_stores_or_adds_what_decode_gives(make, n):
    """decode_into (the ring's receiver: straight into the buffer, added in the
    reduce-scatter) gives decode's values, and decoded + own where it adds; a frame that
    does not decode leaves the buffer as it was."""
    from inceptionn.drivers.collectives.codecs import decode_into
    codec = make()
    rng = np.random.default_rng(n)
    x = (rng.standard_normal(n) * 10.0 ** rng.integers(-8, 2, n)).astype(np.float32)
    own = (rng.standard_normal(n) * 1e-3).astype(np.float32)
    body = codec.encode(x)
    want = codec.decode(body, n)
    out = np.full(n, 7.0, np.float32)
    decode_into(codec, body, out)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    out = own.copy()
    decode_into(codec, body, out, add=True)
    assert np.array_equal(out.view(np.uint32), (want + own).view(np.uint32))
    out = own.copy()
    with pytest.raises(ValueError):
        decode_into(codec, body[:-1] if len(body) > 1 else b"", out, add=True)
    assert np.array_equal(out.view(np.uint32), own.view(np.uint32))


def test_decode_into_adds_at_scales_beyond_the_normal_range():
    from inceptionn.drivers.collectives.codecs import decode_into
    x = np.array([3e38, -1e38, 2.0 ** -140, 1e-45, 0.0, 5.0], np.float32)
    for scale in (2.0 ** -130, 1.0, 2.0 ** -60):
        v = (x.astype(np.float64) * scale).astype(np.float32)
        c = ScaledCodec(10)
        body = c.encode(v)
        own = np.linspace(-1, 1, v.size).astype(np.float32)
        out = own.copy()
        decode_into(c, body, out, add=True)
        assert np.array_equal(out.view(np.uint32), (c.decode(body, v.size) + own).view(np.uint32))


@pytest.mark.parametrize("k", [4, 10, 16])
@pytest.mark.parametrize("name,x", list(_chunks()), ids=[n for n, _ in _chunks()])
def test_the_bounded_codec_recodes_decoded_values_to_the_same_bytes(k, name, x):
    """What lets the ring forward the frames it received (recodes_to_same_bytes): the
    decoded values code to the received bytes again; scaled, but for the scale byte of a
    chunk that decodes to nothing but zeros (the same values either way)."""
    for c in (ScaledCodec(k), WireCodec("bounded", k)):
        assert c.recodes_to_same_bytes
        body = c.encode(x)
        again = c.encode(c.decode(body, x.size))
        if isinstance(c, ScaledCodec) and not np.any(c.decode(body, x.size)):
            assert again[1:] == body[1:]
        else:
            assert again == body, name
    assert not WireCodec("paper", min(k, 15)).recodes_to_same_bytes


@pytest.mark.parametrize("make", [lambda: ScaledCodec(10), lambda: WireCodec("bounded", 10)])
def test_decode_into_stores_the_values_divided(make):
    from inceptionn.drivers.collectives.codecs import decode_into
    codec = make()
    x = np.array([3e38, -1e-3, 2.0 ** -140, 0.7, 5.0, -0.0, np.inf, np.nan] * 9, np.float32)
    body = codec.encode(x)
    out = np.empty_like(x)
    decode_into(codec, body, out, divide_by=3)
    with np.errstate(all="ignore"):
        want = codec.decode(body, x.size) / np.float32(3)
    assert np.array_equal(out.view(np.uint32), want.view(np.uint32))
    with pytest.raises(ValueError, match="added"):
        decode_into(codec, body, out, add=True, divide_by=3)
