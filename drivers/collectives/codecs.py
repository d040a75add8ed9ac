"""The value codecs a ring hop can apply, by name, on one interface.

  "paper"    the paper's codec (Algorithms 2 and 3) at 2^-k: the NIC's group stream
  "bounded"  inceptionn_eb: the same layout with a true error bound (the default of the
             DDP hook: at 2^-10 the paper's codec decodes most small gradients to 0)

`encode(values) -> bytes` gives exactly the group bytes the compression engine emits
for those values (no shim: a ring hop frames them itself), `decode(buf, n)` the float32
values a receiver restores, and `roundtrip(values)` what a receiving NIC delivers. Both
codecs are per value, so the roundtrip of a buffer is the same however it is cut into
chunks or TCP segments: the ring, the NIC and the emulation agree bit for bit, except
where the NIC's TX sends a segment uncompressed (fall-back: a segment of a few floats
that coding does not shrink, which TCP can cut under load), whose floats arrive exact.

Encoding and decoding run in golden.fast's compiled loops, which release the GIL, so
several threads code several chunks at once.

`ScaledCodec` makes the bound follow the data (docs/compressors.md, "Absolute or
scale-following bound"): each chunk is multiplied by 2^-s before the bounded codec and
by 2^s after it, s chosen from the chunk's values and sent as the frame's first byte.
The engines' k stays fixed; the bound becomes |error| <= 2^(s-k) per value.
"""

from __future__ import annotations

import numpy as np

from ... import golden
from ...golden import fast

__all__ = ["CODECS", "WireCodec", "ScaledCodec", "ObjectCodec", "make_codec", "choose_scale",
           "SCALE_MIN", "SCALE_MAX", "DEFAULT_SHARE"]

CODECS = ("paper", "bounded")


class WireCodec:
    """One codec at one error bound 2^-k."""

    def __init__(self, name: str, k: int):
        if name not in CODECS:
            raise ValueError(f"codec must be one of {CODECS}, got {name!r}")
        self.name, self.k = name, golden.check_k(k)
        fast.fast_pack_groups(np.zeros(1, np.uint32), self.k, codec=name)   # k in range

    def __repr__(self):
        return f"<WireCodec {self.name} 2^-{self.k}>"

    def encode(self, values: np.ndarray) -> bytes:
        v = np.ascontiguousarray(values, np.float32)
        return fast.fast_pack_groups(v.view(np.uint32), self.k, codec=self.name)

    def decode(self, buf, n: int) -> np.ndarray:
        """n float32 values from exactly their groups; anything else is a ValueError."""
        bits, consumed, ok = fast.fast_unpack_groups(buf, n, k=self.k, codec=self.name)
        if not ok:
            raise ValueError(f"groups run out: {n} values need more than {len(buf)} bytes")
        if consumed != len(buf):
            raise ValueError(f"{len(buf) - consumed} bytes left over after {n} values")
        return bits.view(np.float32)

    def roundtrip(self, values: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(values), values.size)


# s fits one byte (s - SCALE_MIN). SCALE_MIN: the decoded values times 2^s keep every bit
# (their lowest bit, 2^(s-24) at worst, stays >= 2^-149, the smallest subnormal).
# SCALE_MAX: no finite float32 (< 2^128) reaches 1 at 2^-129, so no value of a chunk
# needs the 32-bit band and a frame is never longer than the receiver's limit.
SCALE_MIN, SCALE_MAX = -126, 129
# Coded with bits (not in the 0-bit band): at least this share of each chunk's values.
DEFAULT_SHARE = 0.25
_EXP_BIAS, _EXP_NONFINITE = 127, 255


def choose_scale(values: np.ndarray, k: int, share: float = DEFAULT_SHARE) -> int:
    """s for one chunk: the largest s at which at least `share` of the finite values
    (one at least) reach the 8-bit band, |v| 2^-s >= 2^-k; i.e. the octave of the
    ceil(share n)-th largest |v|, plus k.

    Only octaves of |v| are counted, and the bounded codec keeps every value at 2^-k or
    above in its octave (its steps are powers of two); so the decoded chunk gives the
    same s again and re-coding it changes nothing (a ring forwards decoded values)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32)
    exp = (bits >> np.uint32(23)).astype(np.uint8)       # the sign bit falls off
    nonfinite = int(np.count_nonzero(exp == _EXP_NONFINITE))
    finite = exp.size - nonfinite
    if finite == 0:
        return 0
    m = max(1, int(np.ceil(share * finite)))

    # A binary search of ~8 counting passes over the uint8 octaves: in CPU time about
    # half of one np.bincount histogram, which widens them to int64 (measured).
    def at_least(e):            # finite values of octave >= e (inf and NaN are 255)
        return int(np.count_nonzero(exp >= e)) - nonfinite

    lo, hi = 0, _EXP_NONFINITE - 1        # at_least(lo) >= m; find the largest such
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if at_least(mid) >= m else (lo, mid - 1)
    e_m = lo
    e_max = int((np.where(exp == _EXP_NONFINITE, 0, exp) if nonfinite else exp).max())
    s = e_m - _EXP_BIAS + k if e_m > 0 else SCALE_MIN             # subnormal: finest
    # The largest value stays far from overflow once scaled up.
    s = max(s, e_max - _EXP_BIAS - 120, SCALE_MIN)
    return min(s, SCALE_MAX)


def _times_2_to(v: np.ndarray, s: int) -> np.ndarray:
    """v 2^s in float32, rounded once (exact where the result is normal): a product with
    the power of two where it is a normal float32, ldexp beyond (10-40x slower)."""
    if -126 <= s <= 127:
        return v * np.float32(2.0 ** s)
    return np.ldexp(v, s).astype(np.float32)


class ScaledCodec:
    """The bounded codec at 2^-k on values scaled by 2^-s per chunk: a frame is one byte,
    s - SCALE_MIN, then the groups of the scaled values. Scaling by a power of two is
    exact in float32 both ways within SCALE_MIN..SCALE_MAX (tested), so the error is
    the codec's at 2^-k, times 2^s: |error| <= 2^(s-k). The paper's codec cannot be
    scaled: it decodes its 8-bit band below 2^-7 to 0, so a decoded chunk would choose
    another s and a forwarded chunk would change."""

    def __init__(self, k: int, share: float = DEFAULT_SHARE):
        if isinstance(share, bool) or not isinstance(share, (int, float)) \
                or not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        self.inner = WireCodec("bounded", k)
        self.k, self.share = self.inner.k, float(share)
        self.name = f"bounded-scaled-{self.share:g}"

    def __repr__(self):
        return f"<ScaledCodec bounded 2^(s-{self.k}), share {self.share:g}>"

    def scale(self, values: np.ndarray) -> int:
        return choose_scale(values, self.k, self.share)

    def scale_down(self, values: np.ndarray) -> tuple[int, np.ndarray]:
        """(s, values 2^-s): what a float32 wire carries for this chunk (a new array)."""
        v = np.ascontiguousarray(values, np.float32)
        s = self.scale(v)
        return s, _times_2_to(v, -s)

    @staticmethod
    def scale_up(values: np.ndarray, s: int) -> np.ndarray:
        """The received (decoded) values times 2^s: exact, as the software wire's decode."""
        return _times_2_to(values, s)

    def encode(self, values: np.ndarray) -> bytes:
        s, scaled = self.scale_down(values)
        return bytes([s - SCALE_MIN]) + self.inner.encode(scaled)

    def decode(self, buf, n: int) -> np.ndarray:
        if len(buf) < 1:
            raise ValueError(f"a scaled frame of {n} values has no scale byte")
        s = buf[0] + SCALE_MIN            # every byte is a scale of the range
        return _times_2_to(self.inner.decode(memoryview(buf)[1:], n), s)

    def roundtrip(self, values: np.ndarray) -> np.ndarray:
        return self.decode(self.encode(values), values.size)


class ObjectCodec:
    """A drivers.collectives.compressors value codec (Float32Codec, TruncCodec, GoldenCodec, EBCodec)
    as a ring hop's codec: the bytes its encode() gives, as the simulated ring counts."""

    def __init__(self, codec):
        self.inner, self.name = codec, getattr(codec, "name", type(codec).__name__)

    def __repr__(self):
        return f"<ObjectCodec {self.name}>"

    def encode(self, values):
        return self.inner.encode(np.ascontiguousarray(values, np.float32))

    def decode(self, buf, n):
        return np.asarray(self.inner.decode(bytes(buf), n), np.float32)

    def roundtrip(self, values):
        return self.decode(self.encode(values), values.size)


def make_codec(codec, k: int):
    """A codec by name ("paper", "bounded") at 2^-k, or a drivers.collectives.compressors codec object."""
    if isinstance(codec, str):
        return WireCodec(codec, k)
    if isinstance(codec, (WireCodec, ScaledCodec)) or getattr(codec, "wire_codec", False):
        return codec                     # already a hop's codec (bytes-like frames)
    if hasattr(codec, "encode") and hasattr(codec, "decode"):
        return ObjectCodec(codec)
    raise ValueError(f"codec must be one of {CODECS} or a codec object, got {codec!r}")
