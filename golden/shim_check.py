"""ShimCheck: version 3's check word (docs/wire-format.md section 10).

TX writes it into shim bytes 4..7; RX recomputes it from the frame as it arrives and
decompresses only on a match. It is the CRC-32 (IEEE 802.3: reflected, polynomial
0x04C11DB7, initial value and final XOR 0xFFFFFFFF, zlib's) of a 26-byte check message
built from the shim's first four bytes and the header fields that stay fixed between two
NICs of a data centre. Fields a hop may change (MAC addresses, VLAN tag, TTL, DSCP and
ECN, the IP header checksum) and the L4 checksum (the engines write it) are left out.
Every field it covers lies in the first 146 bytes of a frame, inside the RX engine's
160-byte header window, so RX still decides before the payload's groups arrive.

Check message (big-endian fields as they appear in the headers):
    0  IPv4 source address (4)      4  IPv4 destination address (4)
    8  IP identification (2)       10  IP protocol (1), 0 (1)
   12  L4 source port (2)          14  L4 destination port (2)
   16  TCP sequence number (4; 0 for UDP)
   20  compressed payload length |C| as the IP header gives it (2)
   22  shim bytes 0..3: L, magic 0xC7, k (4)
"""

import zlib

from .packet_matcher import IPPROTO_TCP

__all__ = ["CHECK_MESSAGE_BYTES", "check_message", "check_word"]

CHECK_MESSAGE_BYTES = 26


def check_message(header, l3, l4, proto, comp_len, shim4):
    """The 26 bytes the check word covers. ``header``: the frame's bytes up to at least the
    L4 header's first 8 bytes; ``l3``, ``l4``, ``proto``: as in FrameInfo; ``comp_len``:
    the L4 payload length |C| (IP total length minus the IP and L4 headers); ``shim4``: the
    shim's first 4 bytes."""
    if not 0 <= comp_len <= 0xFFFF or len(shim4) != 4:
        raise ValueError(f"check message needs |C| in 0..65535 and 4 shim bytes, got {comp_len}, "
                         f"{len(shim4)} bytes")
    h = bytes(header)
    seq = h[l4 + 4:l4 + 8] if proto == IPPROTO_TCP else bytes(4)
    return (h[l3 + 12:l3 + 20] + h[l3 + 4:l3 + 6] + bytes([proto, 0]) + h[l4:l4 + 4] + seq
            + comp_len.to_bytes(2, "big") + bytes(shim4))


def check_word(header, l3, l4, proto, comp_len, shim4):
    """The 32-bit check word (CRC-32 of check_message), as TX writes it big-endian in
    shim bytes 4..7."""
    return zlib.crc32(check_message(header, l3, l4, proto, comp_len, shim4))
