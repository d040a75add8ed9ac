"""Header helpers that both engines share, and parsing and checksum checks of any
Ethernet II / IPv4 / TCP or UDP frame (spec section 4).

Per frame, plain Python on bytes. The engines' transforms are in compression_engine
(tx_frame) and decompression_engine (rx_frame).
"""

from .checksum import ip_header_checksum, l4_checksum
from .packet_matcher import ETH_P_8021Q, IPPROTO_TCP, IPPROTO_UDP, be16, packet_matcher

__all__ = ["parse_frame", "ip_checksum_ok", "l4_checksum_ok", "be16", "set_be16",
           "l4_checksum_offset", "fix_ip_checksum"]


def set_be16(buf, off, value):
    """Write the low 16 bits of ``value`` big-endian at ``buf[off:off + 2]``."""
    buf[off:off + 2] = (value & 0xFFFF).to_bytes(2, "big")


def l4_checksum_offset(proto):
    """Offset of the checksum field in a TCP (16) or UDP (6) header."""
    return 16 if proto == IPPROTO_TCP else 6


def fix_ip_checksum(buf, info):
    """Rewrite the IPv4 header checksum of ``buf`` (a bytearray; FrameInfo ``info``).

    The IP header checksum is always recomputed in full (never updated incrementally)."""
    set_be16(buf, info.l3 + 10, ip_header_checksum(buf[info.l3:info.l3 + 4 * info.ihl]))


def parse_frame(frame):
    """Parse an Ethernet II / IPv4 / TCP or UDP frame whatever its DSCP.

    Raises ValueError when the frame is too short or not such a frame; returns the
    FrameInfo otherwise (used to check checksums of any TCP/UDP frame).
    """
    f = bytes(frame)
    if len(f) < 14:
        raise ValueError(f"frame too short to parse: {len(f)} bytes, an Ethernet header needs 14")
    l3 = 18 if be16(f, 12) == ETH_P_8021Q else 14
    if len(f) < l3 + 20:
        raise ValueError(f"frame too short to parse: {len(f)} bytes, no room for an IPv4 header")
    info = None
    if len(f) > l3 + 1:
        # Match against the frame's own DSCP so that any DSCP parses.
        info = packet_matcher(f, f[l3 + 1] >> 2)
    if info is None:
        raise ValueError("not a parsable IPv4 TCP/UDP frame with at least 4 payload bytes")
    return info


def ip_checksum_ok(frame):
    """True if the IPv4 header checksum of a parsable frame is right."""
    info = parse_frame(frame)
    f = bytes(frame)
    return be16(f, info.l3 + 10) == ip_header_checksum(f[info.l3:info.l3 + 4 * info.ihl])


def l4_checksum_ok(frame):
    """True if the TCP/UDP checksum of a parsable frame is right (a UDP checksum of 0 is off)."""
    info = parse_frame(frame)
    f = bytes(frame)
    off = l4_checksum_offset(info.proto)
    got = be16(f, info.l4 + off)
    if info.proto == IPPROTO_UDP and got == 0:
        return True
    seg = f[info.l4:info.l3 + info.ip_total_len]
    want = l4_checksum(f[info.l3 + 12:info.l3 + 16], f[info.l3 + 16:info.l3 + 20],
                       info.proto, seg, off)
    if info.proto == IPPROTO_UDP and want == 0:
        want = 0xFFFF
    return got == want
