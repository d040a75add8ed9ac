"""Float-array front end of the codec: encode, decode, roundtrip, error-bound parsing."""

import re
from fractions import Fraction

import numpy as np

from .compression_block import check_k
from .compression_unit import pack_groups
from .decompression_unit import unpack_groups
from .wire import K_MAX, K_MIN

__all__ = ["as_float32", "encode", "decode", "roundtrip", "parse_error_bound"]


def as_float32(x):
    """Return ``x`` as a float32 ndarray; any other dtype is rejected (no silent cast)."""
    a = np.asarray(x)
    if a.dtype != np.float32:
        raise ValueError(f"expected a float32 array, got dtype {a.dtype}")
    return a


def encode(x, k):
    """Compress a float32 array (flattened, C order) with error bound 2^-k into groups."""
    a = as_float32(x)
    return pack_groups(np.ascontiguousarray(a).ravel().view(np.uint32), check_k(k))


def decode(buf, n):
    """Decode n float32 values from groups; the buffer must hold exactly those groups."""
    bits, consumed, ok = unpack_groups(buf, n)
    if not ok:
        raise ValueError(f"groups run out: {n} values need more than the {len(buf)} bytes given")
    if consumed != len(buf):
        raise ValueError(f"{len(buf) - consumed} bytes left over after {n} values")
    return bits.view(np.float32)


def roundtrip(x, k):
    """What the receiving NIC delivers for ``x``: encode then decode, same shape."""
    a = as_float32(x)
    out = decode(encode(a, k), a.size)
    return out.reshape(a.shape)


_POW_RE = re.compile(r"^\s*2\s*(?:\^|\*\*)\s*\(?\s*(-?\d+)\s*\)?\s*$")
_INT_RE = re.compile(r"^\s*-\d+\s*$")


def parse_error_bound(text):
    """Parse an error bound 2^-k and return k.

    Accepts ``'2^-10'`` (or ``2**-10``), a negative exponent ``'-10'``, or a decimal
    that is exactly a power of two (``'0.0009765625'``). k must be in 1..126.
    """
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
    if not K_MIN <= k <= K_MAX:
        raise ValueError(f"error bound {text!r} gives k = {k}; k must be in {K_MIN}..{K_MAX}")
    return k
