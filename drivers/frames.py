"""Gradient buffers as the Ethernet frames a host NIC would see, and pcap files of them.

A float32 gradient buffer is sent as one TCP stream tagged for compression (ToS 0x28,
i.e. DSCP 10): each segment carries at most MSS bytes (1448 = a 1500-byte MTU minus
20 bytes IPv4, 20 bytes TCP and 12 bytes of timestamp option that a Linux host would
add; the option itself is left out here, so the frames are 1502 bytes at most).
scapy builds every frame, so the IP and TCP checksums are the ones a host stack writes.

Timestamps are integer nanoseconds throughout; pcaps are written with nanosecond
resolution so that frames paced at 10 Gb/s keep distinct, exact times (the reader and
writer are golden.pcap's).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Iterable, Sequence

import numpy as np

from ..golden import pcap as _pcap

__all__ = [
    "MSS",
    "TOS_COMPRESS",
    "FrameFields",
    "gradient_frames",
    "parse_frame",
    "stream_payload",
    "checksums_ok",
    "line_rate_timestamps",
    "write_pcap",
    "read_pcap",
]

MSS = 1448
TOS_COMPRESS = 0x28  # DSCP 10, ECN 00: the paper's reserved ToS value

# Ethernet preamble + SFD (8), FCS (4) and inter-frame gap (12) also occupy the link.
_WIRE_OVERHEAD = 24


def _as_bytes(buf) -> bytes:
    if isinstance(buf, np.ndarray):
        if buf.dtype != np.float32:
            raise ValueError(f"gradient buffer must be float32, got {buf.dtype}")
        return buf.astype("<f4", copy=False).tobytes()
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return bytes(buf)
    raise ValueError(f"gradient buffer must be a float32 array or bytes, got {type(buf).__name__}")


def gradient_frames(
    buf,
    *,
    mss: int = MSS,
    tos: int = TOS_COMPRESS,
    seq: int = 1000,
    ack: int = 1,
    src_mac: str = "02:00:00:00:00:01",
    dst_mac: str = "02:00:00:00:00:02",
    src_ip: str = "10.0.0.1",
    dst_ip: str = "10.0.0.2",
    sport: int = 40000,
    dport: int = 5201,
    ip_id: int = 1,
    vlan: int | None = None,
) -> list[bytes]:
    """Split `buf` (float32 array or bytes) into Ethernet/IPv4/TCP frames.

    Sequence numbers are consecutive (each segment starts where the previous ended,
    modulo 2^32); IP ids count up from `ip_id`. An empty buffer gives no frames.
    """
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Dot1Q, Ether
    from scapy.packet import Raw

    data = _as_bytes(buf)
    if not 1 <= mss <= 9000:
        raise ValueError(f"mss must be in 1..9000, got {mss}")
    if not 0 <= tos <= 0xFF:
        raise ValueError(f"tos must be one byte, got {tos}")
    if vlan is not None and not 0 <= vlan < 4096:
        raise ValueError(f"vlan id must be in 0..4095, got {vlan}")
    frames = []
    for i, off in enumerate(range(0, len(data), mss)):
        eth = Ether(src=src_mac, dst=dst_mac)
        if vlan is not None:
            eth = eth / Dot1Q(vlan=vlan)
        pkt = (eth
               / IP(src=src_ip, dst=dst_ip, tos=tos, id=(ip_id + i) & 0xFFFF, flags="DF", ttl=64)
               / TCP(sport=sport, dport=dport, seq=(seq + off) & 0xFFFFFFFF, ack=ack,
                     flags="PA", window=502)
               / Raw(data[off:off + mss]))
        frames.append(bytes(pkt))  # bytes() fills in lengths and checksums
    return frames


@dataclass(frozen=True)
class FrameFields:
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


def parse_frame(frame: bytes) -> FrameFields:
    """Read the fields this project cares about from an Ethernet/IPv4/TCP-or-UDP frame."""
    frame = bytes(frame)
    if len(frame) < 14:
        raise ValueError(f"frame too short for Ethernet: {len(frame)} bytes")
    l3, ethertype, vlan = 14, struct.unpack_from("!H", frame, 12)[0], False
    if ethertype == 0x8100:
        if len(frame) < 18:
            raise ValueError("frame too short for a VLAN tag")
        l3, ethertype, vlan = 18, struct.unpack_from("!H", frame, 16)[0], True
    if ethertype != 0x0800:
        raise ValueError(f"not IPv4 (EtherType 0x{ethertype:04x})")
    if len(frame) < l3 + 20:
        raise ValueError("frame too short for an IPv4 header")
    ver_ihl, tos, total = struct.unpack_from("!BBH", frame, l3)
    ihl = ver_ihl & 0xF
    proto = frame[l3 + 9]
    ip_ck = struct.unpack_from("!H", frame, l3 + 10)[0]
    if ver_ihl >> 4 != 4 or ihl < 5:
        raise ValueError(f"bad IPv4 version/IHL byte 0x{ver_ihl:02x}")
    if l3 + total > len(frame) or total < 4 * ihl:
        raise ValueError(f"IP total length {total} does not fit the {len(frame)}-byte frame")
    l4 = l3 + 4 * ihl
    end = l3 + total
    if proto == 6:
        if end < l4 + 20:
            raise ValueError("IP packet too short for a TCP header")
        seq = struct.unpack_from("!I", frame, l4 + 4)[0]
        doff = frame[l4 + 12] >> 4
        l4_ck = struct.unpack_from("!H", frame, l4 + 16)[0]
        start = l4 + 4 * doff
    elif proto == 17:
        if end < l4 + 8:
            raise ValueError("IP packet too short for a UDP header")
        seq = None
        l4_ck = struct.unpack_from("!H", frame, l4 + 6)[0]
        start = l4 + 8
    else:
        raise ValueError(f"IP protocol {proto} is neither TCP nor UDP")
    if start > end:
        raise ValueError("L4 header longer than the IP packet")
    return FrameFields(vlan, l3, tos, total, ip_ck, proto, l4, seq, l4_ck, frame[start:end])


def stream_payload(frames: Iterable[bytes]) -> bytes:
    """Reassemble a TCP stream's bytes; the segments must be in order and contiguous."""
    out = bytearray()
    expect = None
    for i, frame in enumerate(frames):
        f = parse_frame(frame)
        if f.seq is None:
            raise ValueError(f"frame {i} is not TCP")
        if expect is not None and f.seq != expect:
            raise ValueError(f"frame {i}: sequence number {f.seq}, expected {expect} (gap or reordering)")
        out += f.payload
        expect = (f.seq + len(f.payload)) & 0xFFFFFFFF
    return bytes(out)


def checksums_ok(frame: bytes) -> tuple[bool, bool]:
    """(IP header checksum right, L4 checksum right) for the frame as it stands, by scapy."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether

    pkt = Ether(bytes(frame))
    if IP not in pkt:
        raise ValueError("not an IPv4 frame")
    ip = pkt[IP]
    l4cls = TCP if TCP in pkt else UDP if UDP in pkt else None
    if l4cls is None:
        raise ValueError("neither TCP nor UDP")
    ip_fresh = ip.copy()
    del ip_fresh.chksum
    # Rebuilding from the IP layer down recomputes both checksums from the same bytes.
    rebuilt = IP(bytes(ip_fresh))
    l4_fresh = ip.copy()
    del l4_fresh[l4cls].chksum
    rebuilt_l4 = IP(bytes(l4_fresh))[l4cls]
    l4_sent = ip[l4cls].chksum
    if l4cls is UDP and l4_sent == 0:
        l4_good = True  # UDP checksum disabled
    else:
        l4_good = rebuilt_l4.chksum == l4_sent
    return rebuilt.chksum == ip.chksum, l4_good


def line_rate_timestamps(frames: Sequence[bytes], gbps: float = 10.0, start_ns: int = 0) -> list[int]:
    """Back-to-back start times (ns) of the frames on a `gbps` Ethernet link."""
    if gbps <= 0:
        raise ValueError(f"link rate must be > 0, got {gbps}")
    # Offsets accumulate as floats from 0; the epoch start is added as an int so that
    # large absolute times keep nanosecond precision.
    times, t = [], 0.0
    for f in frames:
        times.append(int(start_ns) + int(round(t)))
        t += (len(f) + _WIRE_OVERHEAD) * 8 / gbps
    return times


def write_pcap(path, frames: Sequence[bytes], timestamps_ns: Sequence[int] | None = None) -> None:
    """Write Ethernet frames to a nanosecond pcap; timestamps default to 10 Gb/s pacing."""
    frames = [bytes(f) for f in frames]
    if timestamps_ns is None:
        timestamps_ns = line_rate_timestamps(frames)
    _pcap.write_pcap(path, frames, timestamps_ns)


def read_pcap(path) -> tuple[list[bytes], list[int]]:
    """Frames and their timestamps (ns) from a pcap (micro- or nanosecond resolution) or pcapng."""
    frames, times, _ = _pcap.read_pcap(path)
    return frames, times
