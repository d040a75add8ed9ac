"""Per-band statistics (Table III style) and error-bound parsing."""

import numpy as np
import pytest

from inceptionn import golden
from inceptionn.golden import band_stats, parse_error_bound


def test_band_stats_hand_made():
    # k = 10: 1.5 raw, 0.25 16-bit, 0.01 8-bit, 0.005 8-bit (decodes to 0), 1e-5 zero band
    x = np.array([1.5, 0.25, 0.01, 0.005, 1e-5, -0.3, 0.0, np.nan], np.float32)
    st = band_stats(x, 10, "paper")
    assert st.n == 8 and st.k == 10 and st.codec == "paper"
    assert st.counts == {2: 2, 10: 2, 18: 2, 34: 2}
    assert st.share == {2: 0.25, 10: 0.25, 18: 0.25, 34: 0.25}
    assert st.ratio == pytest.approx(32 * 8 / (2 * 2 + 2 * 10 + 2 * 18 + 2 * 34))
    assert st.byte_ratio == pytest.approx(32 / len(golden.encode(x, 10)))
    assert st.max_error[34] == 0.0
    assert st.max_error[10] == pytest.approx(0.005, rel=1e-6)          # 0.005 -> 0
    assert st.max_error[2] == pytest.approx(1e-5, rel=1e-6)
    assert 0 < st.max_error[18] < 2.0**-15
    assert st.zeroed_8bit == 0.5
    # The bounded codec: same bands and bytes, the 8-bit values within half of 2^-10.
    eb = band_stats(x, 10)
    assert eb.codec == "bounded" and eb.counts == st.counts and eb.byte_ratio == st.byte_ratio
    assert eb.zeroed_8bit == 0.0 and eb.max_error[10] <= 2.0**-11
    assert eb.max_error[18] <= 2.0**-16 and eb.max_error[2] == st.max_error[2]


def test_band_stats_bounds_hold_on_gradients():
    x = np.random.default_rng(1).normal(0, 1e-3, 20000).astype(np.float32)
    for k in (6, 8, 10, 14):
        assert band_stats(x, k).max_error[10] < 2.0**-k
        st = band_stats(x, k, "paper")
        assert sum(st.share.values()) == pytest.approx(1.0)
        assert st.max_error[2] < 2.0**-k
        assert st.max_error[10] < 2.0**-7
        assert st.max_error[18] < 2.0**-15
    # k <= 7: the 8-bit band keeps its 2^-k bound; k > 7 it does not (q7 truncates to 0).
    assert band_stats(x, 6, "paper").max_error[10] < 2.0**-6
    assert band_stats(x, 10, "paper").max_error[10] > 2.0**-10
    assert band_stats(x, 10, "paper").zeroed_8bit > 0.5
    assert band_stats(np.zeros(0, np.float32), 10).ratio == 0.0


@pytest.mark.parametrize("text,k", [
    ("2^-10", 10), ("2^-1", 1), ("2^-126", 126), ("2**-6", 6), (" 2^(-8) ", 8), ("2 ^ -3", 3),
    ("-10", 10), ("-126", 126), ("0.0009765625", 10), ("0.5", 1), ("9.765625e-4", 10),
    ("1/1024", 10), ("0.015625", 6),
])
def test_parse_error_bound(text, k):
    assert parse_error_bound(text) == k
    if k <= 16:
        assert parse_error_bound(text, "bounded") == k
    else:
        with pytest.raises(ValueError, match="1..16 for the bounded codec"):
            parse_error_bound(text, "bounded")


@pytest.mark.parametrize("text,msg", [
    ("2^-0", "1..126"), ("2^-127", "1..126"), ("2^3", "1..126"), ("-0", "1..126"), ("-127", "1..126"),
    ("0.001", "power of two"), ("1", "1..126"), ("3", "power of two"), ("10", "power of two"),
    ("0.75", "power of two"), ("-0.5", "power of two"), ("0", "power of two"),
    ("abc", "cannot parse"), ("", "cannot parse"), ("2^-x", "cannot parse"), ("nan", "cannot parse"),
])
def test_parse_error_bound_rejects(text, msg):
    with pytest.raises(ValueError, match=msg):
        parse_error_bound(text)
