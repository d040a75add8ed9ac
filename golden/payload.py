"""Compressed payload (spec section 3): shim || groups || raw tail bytes.

The shim's byte 2 names the wire format version and so the value codec: 0xC5 version 1
(the paper's codec; byte 3, k, is informative), 0xC6 version 2 (the bounded codec; the
decoder uses byte 3, k in 1..16), 0xC7 version 3 (version 2's codec, and shim bytes 4..7
hold a check word over the frame's invariant header fields, golden.shim_check; the
payload functions leave it 0 and tx_frame fills it, knowing the header).
"""

import numpy as np

from .compression_block import check_codec, check_k, compression_block
from .compression_unit import pack_values
from .decompression_unit import decompression_unit
from .wire import (EB_K_MAX, EB_K_MIN, MAGIC_CODEC, MAGIC_VERSION, MAX_PAYLOAD,
                   SHIM_BYTES, SHIM_MAGIC, SHIM_MAGIC_V1, SHIM_MAGIC_V2, VERSION_CODEC,
                   VERSION_MAGIC, shim_bytes)

__all__ = ["SHIM_BYTES", "SHIM_MAGIC", "SHIM_MAGIC_V2", "MAX_PAYLOAD", "make_shim", "parse_shim",
           "shim_codec", "compress_payload", "compress_payload_with_decoded", "decompress_payload",
           "decoded_payload", "min_compressed_len", "build_payload", "check_version", "shim_version"]


def _values(payload):
    n = len(payload) // 4
    return np.frombuffer(payload, dtype="<u4", count=n).astype(np.uint32, copy=False)


def check_version(version, codec):
    """The wire version to write for ``codec``: ``version`` if it carries that codec (paper:
    1; bounded: 2 or 3), the codec's 4-byte-shim version if None; else ValueError."""
    if version is None:
        return 1 if codec == "paper" else 2
    if isinstance(version, bool) or version not in VERSION_CODEC or VERSION_CODEC[version] != codec:
        raise ValueError(f"wire version {version!r} does not carry the {codec} codec "
                         f"(paper: 1; bounded: 2 or 3)")
    return int(version)


def make_shim(length, k, codec="paper", version=None):
    """Shim: L big-endian, magic (0xC5 paper's codec, 0xC6 bounded, 0xC7 bounded with a
    check word), k; version 3 then 4 check-word bytes, here 0 (tx_frame fills them).

    ``codec`` defaults to the paper's here, as the version-1 block did; ``version`` to the
    codec's 4-byte-shim version (1 or 2); k is checked against the codec's range (paper
    1..126, bounded 1..16)."""
    codec = check_codec(codec)
    version = check_version(version, codec)
    if not 0 <= length <= MAX_PAYLOAD:
        raise ValueError(f"payload length {length} does not fit the 16-bit shim (max {MAX_PAYLOAD})")
    shim = length.to_bytes(2, "big") + bytes([VERSION_MAGIC[version], check_k(k, codec)])
    return shim + bytes(shim_bytes(version) - SHIM_BYTES)


def parse_shim(comp):
    """(L, magic, k) from the first 4 bytes of a compressed payload (of either version)."""
    if len(comp) < SHIM_BYTES:
        raise ValueError(f"a compressed payload starts with a 4-byte shim, got {len(comp)} bytes")
    return int.from_bytes(comp[0:2], "big"), comp[2], comp[3]


def shim_version(comp):
    """The wire version the shim's magic names (1, 2 or 3), else ValueError."""
    magic = parse_shim(comp)[1]
    if magic not in MAGIC_VERSION:
        raise ValueError(f"shim magic is {magic:#04x}, expected "
                         f"{' or '.join(f'{m:#04x}' for m in MAGIC_VERSION)}")
    return MAGIC_VERSION[magic]


def shim_codec(comp):
    """(L, codec, k) of a shim a decoder accepts, else ValueError: the magic must be a known
    version's and, for version 2, k must be in 1..16 (the decoder needs it)."""
    length, magic, k = parse_shim(comp)
    if magic not in MAGIC_CODEC:
        raise ValueError(f"shim magic is {magic:#04x}, expected "
                         f"{' or '.join(f'{m:#04x}' for m in MAGIC_CODEC)}")
    if magic != SHIM_MAGIC_V1 and not EB_K_MIN <= k <= EB_K_MAX:
        raise ValueError(f"version-{MAGIC_VERSION[magic]} shim carries k = {k}, outside "
                         f"{EB_K_MIN}..{EB_K_MAX}")
    if len(comp) < shim_bytes(MAGIC_VERSION[magic]):
        raise ValueError(f"a version-3 payload starts with an 8-byte shim, got {len(comp)} bytes")
    return length, MAGIC_CODEC[magic], k


def min_compressed_len(length, version=2):
    """The fewest bytes a compressed payload restoring ``length`` bytes can have: the shim
    (8 bytes in version 3), one 2-byte zero tag word per group of 8 values and the raw
    tail (RX's bound in versions 2 and 3)."""
    n, r = divmod(int(length), 4)
    return shim_bytes(version) + 2 * -(-n // 8) + r


def build_payload(payload, k, codec, with_decoded, pack, version=None):
    """(C, D or None) for bytes ``payload``, the groups from ``pack(values, decoded)``
    (uint32[n] values; fills ``decoded``, uint32[n] or None, with the restored bit
    patterns): the shim (make_shim's checks), the groups, the tail. One pass of the codec
    gives both (the TX engine needs D for the L4 checksum); D is filled in place, the
    decoded values then the tail, and copied into bytes once. The NumPy model and
    golden.fast build C with it, each with its own ``pack``."""
    shim = make_shim(len(payload), k, codec, version)
    n = len(payload) // 4
    tail = payload[4 * n:]
    if n == 0:
        return shim + tail, (tail if with_decoded else None)
    if not with_decoded:
        return shim + pack(_values(payload), None) + tail, None
    dec = np.empty(4 * n + len(tail), np.uint8)
    dec[4 * n:] = np.frombuffer(bytes(tail), np.uint8)
    comp = shim + pack(_values(payload), dec[:4 * n].view(np.uint32)) + tail
    return comp, dec.tobytes()


def _compress(payload, k, with_decoded, codec, version=None):
    return build_payload(payload, k, codec, with_decoded,
                         lambda values, decoded: pack_values(values, k, decoded, codec), version)


def compress_payload(payload, k, codec="paper", version=None):
    """C = shim || groups of the L div 4 little-endian values || the L mod 4 tail bytes
    (``version`` as make_shim's)."""
    return _compress(bytes(payload), k, False, codec, version)[0]


def compress_payload_with_decoded(payload, k, codec="paper", version=None):
    """(C, D) from one pass of the codec: C as compress_payload, D as decoded_payload
    (the TX engine needs D for the L4 checksum)."""
    return _compress(bytes(payload), k, True, codec, version)


def decompress_payload(comp):
    """Restore D from C, decoding with the codec its shim names (shim_codec); returns
    ``(D, bad)`` with D exactly L bytes (see decompression_unit). A version-3 check word
    is not checked here: it covers the frame's header (rx_frame checks it)."""
    comp = bytes(comp)
    length, codec, k = shim_codec(comp)
    start = shim_bytes(shim_version(comp))
    return decompression_unit(comp[start:], length // 4, length % 4, k, codec)


def decoded_payload(payload, k, codec="paper"):
    """D: what the receiver restores from ``compress_payload(payload, k, codec)``."""
    payload = bytes(payload)
    n = len(payload) // 4
    decoded = compression_block(_values(payload), k, codec)[3]
    return decoded.astype("<u4").tobytes() + payload[4 * n:]
