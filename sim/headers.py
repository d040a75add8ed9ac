"""Random header layouts for the stage testbenches, written once: where a frame's IPv4
header, L4 header and payload start (a VLAN tag or none, IHL 5..15, UDP or TCP with a
data offset of 5..15 words), and the PacketMatcher's result (MatchInfo's fields) that
the stages after it are handed for such a frame."""

import random
from typing import NamedTuple

__all__ = ["Layout", "header_layout", "match_info"]


class Layout(NamedTuple):
    vlan: int       # 1: an 802.1Q tag, the IPv4 header at 18
    ihl: int        # IPv4 header words
    udp: int        # 1: UDP, 0: TCP
    l3: int         # IPv4 header offset
    l4: int         # L4 header offset
    p: int          # payload offset P


def header_layout(rng: random.Random) -> Layout:
    vlan, ihl, udp = rng.getrandbits(1), rng.randint(5, 15), rng.getrandbits(1)
    l3 = 18 if vlan else 14
    l4 = l3 + 4 * ihl
    return Layout(vlan, ihl, udp, l3, l4, l4 + (8 if udp else 4 * rng.randint(5, 15)))


def match_info(rng: random.Random, lay: Layout, *, payload_len, ip_total_len, min_frame_len=None,
               header_ok=1) -> dict:
    """MatchInfo's fields for a frame of layout ``lay`` (ToS and L4 checksum random);
    ``min_frame_len`` defaults to what the IP total length makes it."""
    return {"header_ok": header_ok, "vlan": lay.vlan, "udp": lay.udp,
            "proto": 17 if lay.udp else 6, "l3": lay.l3, "ihl": lay.ihl, "l4": lay.l4,
            "l4_hdr_len": lay.p - lay.l4, "payload_offset": lay.p, "payload_len": payload_len,
            "ip_total_len": ip_total_len,
            "min_frame_len": lay.l3 + ip_total_len if min_frame_len is None else min_frame_len,
            "tos": rng.getrandbits(8), "l4_csum": rng.getrandbits(16)}
