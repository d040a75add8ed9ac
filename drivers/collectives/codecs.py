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
"""

from __future__ import annotations

import numpy as np

from ... import golden
from ...golden import fast

__all__ = ["CODECS", "WireCodec", "ObjectCodec", "make_codec"]

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


class ObjectCodec:
    """A golden.compressors value codec (Float32Codec, TruncCodec, GoldenCodec, EBCodec)
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
    """A codec by name ("paper", "bounded") at 2^-k, or a golden.compressors codec object."""
    if isinstance(codec, str):
        return WireCodec(codec, k)
    if hasattr(codec, "encode") and hasattr(codec, "decode"):
        return ObjectCodec(codec)
    raise ValueError(f"codec must be one of {CODECS} or a codec object, got {codec!r}")
