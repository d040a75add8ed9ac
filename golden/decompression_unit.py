"""DecompressionUnit at the byte-stream level (Fig. 10, spec sections 3 and 4 RX)."""

from .groups import unpack_groups

__all__ = ["decompression_unit"]


def decompression_unit(stream, n, r):
    """Restore 4n + r payload bytes from a compressed stream (groups, then r raw tail bytes).

    Returns ``(data, error)``. ``data`` is always exactly 4n + r bytes: the stream is
    read as if zero bytes followed its end, so values or tail bytes past the end come
    out as zeros. ``error`` is set when the groups or the tail run past the end of the
    stream, or when bytes are left over after the tail.
    """
    if n < 0 or not 0 <= r <= 3:
        raise ValueError(f"need n >= 0 values and 0..3 tail bytes, got n={n}, r={r}")
    stream = bytes(stream)
    bits, consumed, _ = unpack_groups(stream, n)
    tail = stream[consumed:consumed + r]
    tail += bytes(r - len(tail))
    error = consumed + r != len(stream)
    return bits.astype("<u4").tobytes() + tail, error
