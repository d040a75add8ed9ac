"""Per-band statistics of the codec (the paper's Table III) and the measured errors."""

from dataclasses import dataclass, field

import numpy as np

from .api import as_float32
from .compression_block import (TAG_16BIT, TAG_8BIT, TAG_RAW, TAG_ZERO, check_codec, check_k,
                                compression_block)
from .compression_unit import pack_groups
from .wire import CODEC_DEFAULT

__all__ = ["BandStats", "band_stats", "BAND_BITS", "BAND_NAMES"]

# Bits per value including the 2-bit tag, by tag; the paper's Table III columns.
BAND_BITS = {TAG_ZERO: 2, TAG_8BIT: 10, TAG_16BIT: 18, TAG_RAW: 34}
BAND_NAMES = {TAG_ZERO: "0-bit", TAG_8BIT: "8-bit", TAG_16BIT: "16-bit", TAG_RAW: "32-bit"}


@dataclass
class BandStats:
    """Distribution, ratios and errors of one array under error bound 2^-k."""
    k: int
    n: int
    counts: dict = field(default_factory=dict)      # code bits (2/10/18/34) -> values
    share: dict = field(default_factory=dict)       # code bits -> fraction of values
    max_error: dict = field(default_factory=dict)   # code bits -> max |decoded - x| (finite x)
    ratio: float = 0.0          # 32 n / total bits incl. tags
    byte_ratio: float = 0.0     # 4 n / bytes of the packed groups
    zeroed_8bit: float = 0.0    # fraction of the 8-bit band that decodes to zero
    codec: str = CODEC_DEFAULT  # "paper" (wire version 1) or "bounded" (version 2)


def band_stats(x, k, codec=CODEC_DEFAULT):
    """Table III-style statistics of float32 array ``x`` with error bound 2^-k and the
    value codec ``codec`` (the bands, shares and ratios are the same for both; the
    errors and the zeroed 8-bit codes are not).

    Errors are measured in float64 over finite inputs only (Inf/NaN pass through
    bit-exact in the 32-bit band).
    """
    a = np.ascontiguousarray(as_float32(x)).ravel()
    k = check_k(k, check_codec(codec))
    bits = a.view(np.uint32)
    tag, _, _, decoded = compression_block(bits, k, codec)
    out = BandStats(k=k, n=int(a.size), codec=codec)
    with np.errstate(invalid="ignore"):     # Inf - Inf: NaN, left out below (finite)
        err = np.abs(decoded.view(np.float32).astype(np.float64) - a.astype(np.float64))
    finite = np.isfinite(a)
    total_bits = 0
    for t, nbits in BAND_BITS.items():
        sel = tag == t
        cnt = int(sel.sum())
        total_bits += cnt * nbits
        out.counts[nbits] = cnt
        out.share[nbits] = cnt / a.size if a.size else 0.0
        e = err[sel & finite]
        out.max_error[nbits] = float(e.max()) if e.size else 0.0
    out.ratio = 32 * a.size / total_bits if total_bits else 0.0
    packed = len(pack_groups(bits, k, codec))
    out.byte_ratio = 4 * a.size / packed if packed else 0.0
    in8 = tag == TAG_8BIT
    out.zeroed_8bit = float((decoded[in8] == 0).mean()) if in8.any() else 0.0
    return out
