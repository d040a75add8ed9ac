"""Header helpers that both engines share, and the one parser and checksum check of
any Ethernet II / IPv4 / TCP or UDP frame (spec section 4), which the host side
(drivers/) uses too.

Per frame, plain Python on bytes. The engines' transforms are in compression_engine
(tx_frame) and decompression_engine (rx_frame).
"""

from dataclasses import dataclass

from .checksum import ip_header_checksum, l4_checksum
from .packet_matcher import (ETH_P_8021Q, ETH_P_IP, IPPROTO_TCP, IPPROTO_UDP, be16,
                             packet_matcher)

__all__ = ["parse_frame", "ip_checksum_ok", "l4_checksum_ok", "FrameFields", "frame_fields",
           "checksums_ok", "be16", "set_be16", "l4_checksum_offset", "fix_ip_checksum"]


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
    FrameInfo otherwise (used to check checksums of any TCP/UDP frame). This is the
    PacketMatcher's view (a frame it would take but for its DSCP: at least 4 payload
    bytes, no fragment); frame_fields parses any TCP/UDP frame, pure ACKs included.
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


def _ip_ok(f, l3, l4):
    return be16(f, l3 + 10) == ip_header_checksum(f[l3:l4])


def _l4_ok(f, l3, l4, proto, total):
    off = l4_checksum_offset(proto)
    got = be16(f, l4 + off)
    if proto == IPPROTO_UDP and got == 0:
        return True
    want = l4_checksum(f[l3 + 12:l3 + 16], f[l3 + 16:l3 + 20], proto, f[l4:l3 + total], off)
    if proto == IPPROTO_UDP and want == 0:
        want = 0xFFFF
    return got == want


def ip_checksum_ok(frame):
    """True if the IPv4 header checksum of a parsable frame is right."""
    info = parse_frame(frame)
    return _ip_ok(bytes(frame), info.l3, info.l4)


def l4_checksum_ok(frame):
    """True if the TCP/UDP checksum of a parsable frame is right (a UDP checksum of 0 is off)."""
    info = parse_frame(frame)
    return _l4_ok(bytes(frame), info.l3, info.l4, info.proto, info.ip_total_len)


@dataclass(frozen=True)
class FrameFields:
    """The fields of any Ethernet II (optionally 802.1Q) / IPv4 / TCP or UDP frame."""
    vlan: bool
    l3: int  # offset of the IPv4 header
    tos: int
    ip_total_len: int
    ip_checksum: int
    proto: int
    l4: int  # offset of the TCP/UDP header
    seq: int | None  # TCP sequence number (None for UDP)
    l4_checksum: int
    payload: bytes  # the L4 payload (Ethernet padding excluded)
    tcp_flags: int | None = None  # TCP flags byte (None for UDP)


def frame_fields(frame) -> FrameFields:
    """Read the fields of an Ethernet/IPv4/TCP-or-UDP frame whatever its DSCP and
    payload length; raises ValueError naming what is wrong (the host side's parser)."""
    frame = bytes(frame)
    if len(frame) < 14:
        raise ValueError(f"frame too short for Ethernet: {len(frame)} bytes")
    l3, ethertype, vlan = 14, be16(frame, 12), False
    if ethertype == ETH_P_8021Q:
        if len(frame) < 18:
            raise ValueError("frame too short for a VLAN tag")
        l3, ethertype, vlan = 18, be16(frame, 16), True
    if ethertype != ETH_P_IP:
        raise ValueError(f"not IPv4 (EtherType 0x{ethertype:04x})")
    if len(frame) < l3 + 20:
        raise ValueError("frame too short for an IPv4 header")
    ver_ihl, tos, total = frame[l3], frame[l3 + 1], be16(frame, l3 + 2)
    ihl = ver_ihl & 0xF
    proto = frame[l3 + 9]
    ip_ck = be16(frame, l3 + 10)
    if ver_ihl >> 4 != 4 or ihl < 5:
        raise ValueError(f"bad IPv4 version/IHL byte 0x{ver_ihl:02x}")
    if l3 + total > len(frame) or total < 4 * ihl:
        raise ValueError(f"IP total length {total} does not fit the {len(frame)}-byte frame")
    l4 = l3 + 4 * ihl
    end = l3 + total
    flags = None
    if proto == IPPROTO_TCP:
        if end < l4 + 20:
            raise ValueError("IP packet too short for a TCP header")
        seq = int.from_bytes(frame[l4 + 4:l4 + 8], "big")
        doff = frame[l4 + 12] >> 4
        flags = frame[l4 + 13]
        l4_ck = be16(frame, l4 + 16)
        start = l4 + 4 * doff
    elif proto == IPPROTO_UDP:
        if end < l4 + 8:
            raise ValueError("IP packet too short for a UDP header")
        seq = None
        l4_ck = be16(frame, l4 + 6)
        start = l4 + 8
    else:
        raise ValueError(f"IP protocol {proto} is neither TCP nor UDP")
    if start > end:
        raise ValueError("L4 header longer than the IP packet")
    return FrameFields(vlan, l3, tos, total, ip_ck, proto, l4, seq, l4_ck, frame[start:end], flags)


def checksums_ok(frame) -> tuple[bool, bool]:
    """(IP header checksum right, L4 checksum right) of any frame frame_fields parses
    (a UDP checksum of 0 is off: right)."""
    f = frame_fields(frame)
    frame = bytes(frame)
    return _ip_ok(frame, f.l3, f.l4), _l4_ok(frame, f.l3, f.l4, f.proto, f.ip_total_len)
