"""Gradient buffers as the Ethernet frames a host NIC would see, and pcap files of them.

A float32 gradient buffer is sent as one TCP stream tagged for compression (ToS 0x28,
i.e. DSCP 10): each segment carries at most MSS bytes (1448 = a 1500-byte MTU minus
20 bytes IPv4, 20 bytes TCP and 12 bytes of timestamp option that a Linux host would
add; the option itself is left out here, so the frames are 1502 bytes at most).
scapy builds every frame, so the IP and TCP checksums are the ones a host stack writes.
Parsing and checksum checks are golden.frames' (frame_fields, checksums_ok).

Timestamps are integer nanoseconds throughout; pcaps are written with nanosecond
resolution so that frames paced at 10 Gb/s keep distinct, exact times (the reader and
writer are golden.pcap's).
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..golden import pcap as _pcap
from ..golden.frames import FrameFields, checksums_ok
from ..golden.frames import frame_fields
from ..golden.wire import TOS_DEFAULT

__all__ = [
    "MSS",
    "FrameFields",
    "gradient_frames",
    "stream_payload",
    "checksums_ok",
    "line_rate_timestamps",
    "write_pcap",
    "read_pcap",
]

MSS = 1448

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
    tos: int = TOS_DEFAULT,
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


def stream_payload(frames: Iterable[bytes]) -> bytes:
    """Reassemble a TCP stream's bytes; the segments must be in order and contiguous."""
    out = bytearray()
    expect = None
    for i, frame in enumerate(frames):
        f = frame_fields(frame)
        if f.seq is None:
            raise ValueError(f"frame {i} is not TCP")
        if expect is not None and f.seq != expect:
            raise ValueError(f"frame {i}: sequence number {f.seq}, expected {expect} (gap or reordering)")
        out += f.payload
        expect = (f.seq + len(f.payload)) & 0xFFFFFFFF
    return bytes(out)


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
