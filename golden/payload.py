"""Compressed payload (spec section 3): shim || groups || raw tail bytes."""

import numpy as np

from .compression_block import check_k, compression_block
from .compression_unit import pack_values
from .decompression_unit import decompression_unit
from .wire import MAX_PAYLOAD, SHIM_BYTES, SHIM_MAGIC

__all__ = ["SHIM_BYTES", "SHIM_MAGIC", "MAX_PAYLOAD", "make_shim", "parse_shim",
           "compress_payload", "compress_payload_with_decoded", "decompress_payload",
           "decoded_payload"]


def _values(payload):
    n = len(payload) // 4
    return np.frombuffer(payload, dtype="<u4", count=n).astype(np.uint32, copy=False)


def make_shim(length, k):
    """4-byte shim: L big-endian, magic 0xC5, k."""
    if not 0 <= length <= MAX_PAYLOAD:
        raise ValueError(f"payload length {length} does not fit the 16-bit shim (max {MAX_PAYLOAD})")
    return length.to_bytes(2, "big") + bytes([SHIM_MAGIC, check_k(k)])


def parse_shim(comp):
    """(L, magic, k) from the first 4 bytes of a compressed payload."""
    if len(comp) < SHIM_BYTES:
        raise ValueError(f"a compressed payload starts with a 4-byte shim, got {len(comp)} bytes")
    return int.from_bytes(comp[0:2], "big"), comp[2], comp[3]


def _compress(payload, k, with_decoded):
    """(C, D or None) for bytes ``payload``: one pass of the codec gives both (the TX
    engine needs D for the L4 checksum)."""
    shim = make_shim(len(payload), k)
    n = len(payload) // 4
    tail = payload[4 * n:]
    if n == 0:
        return shim + tail, (tail if with_decoded else None)
    decoded = np.empty(n, np.uint32) if with_decoded else None
    comp = shim + pack_values(_values(payload), k, decoded) + tail
    if with_decoded:
        return comp, decoded.astype("<u4", copy=False).tobytes() + tail
    return comp, None


def compress_payload(payload, k):
    """C = shim || groups of the L div 4 little-endian values || the L mod 4 tail bytes."""
    return _compress(bytes(payload), k, False)[0]


def compress_payload_with_decoded(payload, k):
    """(C, D) from one pass of the codec: C as compress_payload, D as decoded_payload
    (the TX engine needs D for the L4 checksum)."""
    return _compress(payload, k, True)


def decompress_payload(comp):
    """Restore D from C; returns ``(D, bad)`` with D exactly L bytes (see decompression_unit)."""
    comp = bytes(comp)
    length, magic, _ = parse_shim(comp)
    if magic != SHIM_MAGIC:
        raise ValueError(f"shim magic is {magic:#04x}, expected {SHIM_MAGIC:#04x}")
    return decompression_unit(comp[SHIM_BYTES:], length // 4, length % 4)


def decoded_payload(payload, k):
    """D: what the receiver restores from ``compress_payload(payload, k)``."""
    payload = bytes(payload)
    n = len(payload) // 4
    decoded = compression_block(_values(payload), k)[3]
    return decoded.astype("<u4").tobytes() + payload[4 * n:]
