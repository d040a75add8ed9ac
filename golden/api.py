"""Float-array front end of the codec: encode, decode, roundtrip, error-bound parsing.

These are the NumPy model's entry points for users (the ring's software emulation, the
compressors): ``codec`` is "bounded" (wire version 2, k in 1..16) unless the caller
chooses "paper" (wire version 1, k in 1..126). golden.fast.fast_pack_groups /
fast_unpack_groups give the same bytes, compiled.
"""

import re
from fractions import Fraction

import numpy as np

from .arguments import as_count, as_frame, check_fits
from .compression_block import check_codec, check_k, k_range
from .compression_unit import pack_groups
from .decompression_unit import unpack_groups
from .wire import CODEC_DEFAULT

__all__ = ["as_float32", "encode", "decode", "roundtrip", "parse_error_bound"]


def as_float32(x):
    """Return ``x`` as a float32 ndarray; any other dtype is rejected (no silent cast)."""
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise ValueError(f"expected a float32 array, got dtype {a.dtype}")
    return a


def encode(x, k, codec=CODEC_DEFAULT):
    """Compress a float32 array (flattened, C order) with error bound 2^-k into groups
    (no shim): the bytes of the payload between the shim and the tail."""
    a = as_float32(x)
    k = check_k(k, check_codec(codec))
    return pack_groups(np.ascontiguousarray(a).ravel().view(np.uint32), k, codec)


def decode(buf, n, k=None, codec=CODEC_DEFAULT):
    """Decode n float32 values from groups; the buffer must hold exactly those groups.
    The bounded codec needs the k it was encoded with (the paper's ignores k)."""
    if check_codec(codec) == "bounded":
        if k is None:
            raise ValueError("the bounded codec decodes with the k it was encoded with; give k")
        check_k(k, codec)
    buf, n = as_frame(buf, "buf"), as_count(n)
    check_fits(n, len(buf))        # before the n values are allocated
    bits, consumed, ok = unpack_groups(buf, n, k, codec)
    if not ok:
        raise ValueError(f"groups run out: {n} values need more than the {len(buf)} bytes given")
    if consumed != len(buf):
        raise ValueError(f"{len(buf) - consumed} bytes left over after {n} values")
    return bits.view(np.float32)


def roundtrip(x, k, codec=CODEC_DEFAULT):
    """What the receiving NIC delivers for ``x``: encode then decode, same shape."""
    a = as_float32(x)
    out = decode(encode(a, k, codec), a.size, k, codec)
    return out.reshape(a.shape)


_POW_RE = re.compile(r"^\s*2\s*(?:\^|\*\*)\s*\(?\s*(-?\d+)\s*\)?\s*$")
_INT_RE = re.compile(r"^\s*-\d+\s*$")


def parse_error_bound(text, codec="paper"):
    """Parse an error bound 2^-k and return k.

    Accepts ``'2^-10'`` (or ``2**-10``), a negative exponent ``'-10'``, or a decimal
    that is exactly a power of two (``'0.0009765625'``). k must be in the codec's range:
    1..126 for the paper's codec, 1..16 for the bounded one.
    """
    k_min, k_max = k_range(codec)
    s = str(text).strip()
    m = _POW_RE.match(s)
    if m:
        k = -int(m.group(1))
    elif _INT_RE.match(s):
        k = -int(s)
    else:
        try:
            v = Fraction(s)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"cannot parse error bound {text!r}: use 2^-k, -k or an exact "
                             f"power of two such as 0.0009765625") from None
        if v <= 0 or v.numerator != 1 or v.denominator & (v.denominator - 1):
            raise ValueError(f"error bound {text!r} is not 2^-k (an exact power of two below 1)")
        k = v.denominator.bit_length() - 1
    if not k_min <= k <= k_max:
        raise ValueError(f"error bound {text!r} gives k = {k}; k must be in {k_min}..{k_max}"
                         + ("" if codec == "paper" else f" for the {codec} codec"))
    return k
