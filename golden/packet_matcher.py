"""PacketMatcher: decides from the headers whether a frame is eligible (spec section 4).

Shared by TX and RX. Returns where the L4 payload starts and how long it is.
"""

import numbers
from dataclasses import dataclass

from .wire import DSCP_DEFAULT

__all__ = ["FrameInfo", "packet_matcher", "check_dscp",
           "ETH_P_IP", "ETH_P_8021Q", "IPPROTO_TCP", "IPPROTO_UDP", "be16"]

ETH_P_IP = 0x0800
ETH_P_8021Q = 0x8100
IPPROTO_TCP = 6
IPPROTO_UDP = 17


@dataclass(frozen=True)
class FrameInfo:
    """Offsets of an eligible frame (bytes from the frame start)."""
    vlan: bool             # one 802.1Q tag present
    l3: int                # IPv4 header start (14 or 18)
    ihl: int               # IPv4 header length in 32-bit words
    l4: int                # TCP/UDP header start
    proto: int             # 6 (TCP) or 17 (UDP)
    payload_offset: int    # P: L4 payload start
    payload_len: int       # L: L4 payload bytes (Ethernet padding excluded)
    ip_total_len: int      # IPv4 total length field


def check_dscp(dscp):
    """Return dscp as int if it is an integer in 0..63, else raise ValueError."""
    if isinstance(dscp, bool) or not isinstance(dscp, numbers.Integral) or not 0 <= dscp <= 63:
        raise ValueError(f"DSCP must be an integer in 0..63, got {dscp!r}")
    return int(dscp)


def be16(b, off):
    """The big-endian 16-bit field at ``b[off:off + 2]``."""
    return (b[off] << 8) | b[off + 1]


def packet_matcher(frame, dscp=DSCP_DEFAULT, *, window=None):
    """FrameInfo of an eligible frame, or None (not eligible, runt, lying lengths).

    ``window`` (RX only; None for TX) is the number of leading bytes a cut-through
    engine holds when it decides. A frame longer than that cannot be checked against
    its IP total length in time, so for it the "fits in the frame" rule is skipped
    and ``payload_len`` is the length the IP header claims (the caller must then
    cope with fewer bytes arriving). Frames within the window are checked in full.
    """
    dscp = check_dscp(dscp)
    if window is not None and (isinstance(window, bool) or not isinstance(window, numbers.Integral)
                               or window < 0):
        raise ValueError(f"window must be None or a non-negative integer, got {window!r}")
    f = bytes(frame)
    if len(f) < 14:
        return None
    ethertype, l3, vlan = be16(f, 12), 14, False
    if ethertype == ETH_P_8021Q:
        if len(f) < 18:
            return None
        ethertype, l3, vlan = be16(f, 16), 18, True
    if ethertype != ETH_P_IP or len(f) < l3 + 20:
        return None
    version, ihl = f[l3] >> 4, f[l3] & 0xF
    if version != 4 or ihl < 5 or f[l3 + 1] >> 2 != dscp:
        return None
    total = be16(f, l3 + 2)
    # Bytes past l3 + total are Ethernet padding; a total beyond the frame is a lie,
    # caught here unless the frame outlasts a cut-through engine's window.
    if l3 + total > len(f) and (window is None or len(f) <= window):
        return None
    if be16(f, l3 + 6) & 0x3FFF:          # MF flag or a fragment offset
        return None
    proto, l4 = f[l3 + 9], l3 + 4 * ihl
    l4_len = total - 4 * ihl
    if proto == IPPROTO_TCP:
        if l4_len < 20:
            return None
        doff = f[l4 + 12] >> 4
        if doff < 5 or 4 * doff > l4_len:
            return None
        payload = l4 + 4 * doff
    elif proto == IPPROTO_UDP:
        if l4_len < 8 or be16(f, l4 + 4) != l4_len:
            return None
        payload = l4 + 8
    else:
        return None
    length = l3 + total - payload
    if length < 4:
        return None
    return FrameInfo(vlan, l3, ihl, l4, proto, payload, length, total)
