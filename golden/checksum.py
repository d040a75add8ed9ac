"""Internet checksums (RFC 1071), one's-complement sums in NumPy."""

import numpy as np

__all__ = ["ones_sum", "internet_checksum", "ip_header_checksum", "l4_checksum"]


def ones_sum(data, start=0):
    """16-bit one's-complement sum of big-endian words (odd length: zero pad), folded."""
    data = bytes(data)
    if len(data) % 2:
        data += b"\0"
    total = int(np.frombuffer(data, dtype=">u2").sum(dtype=np.uint64)) + start
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def internet_checksum(data):
    """Complement of the one's-complement sum."""
    return ~ones_sum(data) & 0xFFFF


def ip_header_checksum(header):
    """Checksum of an IPv4 header, its checksum field (bytes 10-11) taken as zero."""
    h = bytearray(header)
    h[10:12] = b"\0\0"
    return internet_checksum(h)


def l4_checksum(src, dst, proto, segment, csum_offset, *, sum_fn=None):
    """TCP/UDP checksum over the pseudo header and ``segment`` (its checksum field zeroed).

    ``segment`` is the L4 header and payload; the pseudo header takes its length.
    ``sum_fn`` replaces ones_sum (the compiled one of golden.fast).
    """
    seg = bytearray(segment)
    seg[csum_offset:csum_offset + 2] = b"\0\0"
    pseudo = bytes(src) + bytes(dst) + bytes([0, proto]) + len(seg).to_bytes(2, "big")
    return ~(sum_fn or ones_sum)(pseudo + bytes(seg)) & 0xFFFF
