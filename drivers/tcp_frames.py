"""Gradient buffers as the Ethernet frames a host NIC would see, and pcap files of them.

A float32 gradient buffer is sent as one TCP stream tagged for compression (ToS 0x28,
i.e. DSCP 10): each segment carries at most MSS bytes (1448 = a 1500-byte MTU minus
20 bytes IPv4, 20 bytes TCP and 12 bytes of timestamp option that a Linux host would
add; the option itself is left out here, so the frames are 1502 bytes at most).
The IP and TCP checksums are the ones a host stack writes (golden.checksum's; the
frames equal scapy's byte for byte, checked in the tests).
Parsing and checksum checks are golden.frames' (frame_fields, checksums_ok).

Timestamps are integer nanoseconds throughout; pcaps are written with nanosecond
resolution so that frames paced at 10 Gb/s keep distinct, exact times (the reader and
writer are golden.pcap's).
"""

from __future__ import annotations

import socket
import struct
from typing import Iterable, Sequence

import numpy as np

from ..golden import pcap as _pcap
from ..golden.checksum import ip_header_checksum, l4_checksum
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
    The frames are the bytes scapy builds for the same fields (tests/test_drivers.py
    holds them equal), put together here with struct: scapy took seconds per thousand
    frames, most of the demo's time.
    """
    data = _as_bytes(buf)
    if not 1 <= mss <= 9000:
        raise ValueError(f"mss must be in 1..9000, got {mss}")
    if not 0 <= tos <= 0xFF:
        raise ValueError(f"tos must be one byte, got {tos}")
    if vlan is not None and not 0 <= vlan < 4096:
        raise ValueError(f"vlan id must be in 0..4095, got {vlan}")
    src, dst = socket.inet_aton(src_ip), socket.inet_aton(dst_ip)
    eth = _mac(dst_mac) + _mac(src_mac)
    eth += (b"\x81\x00" + vlan.to_bytes(2, "big") if vlan is not None else b"") + b"\x08\x00"
    frames = []
    for i, off in enumerate(range(0, len(data), mss)):
        payload = data[off:off + mss]
        # TCP: data offset 5 words, flags PSH|ACK, window 502, urgent pointer 0.
        tcp = bytearray(struct.pack("!HHIIBBHHH", sport, dport, (seq + off) & 0xFFFFFFFF,
                                    ack, 5 << 4, 0x18, 502, 0, 0) + payload)
        tcp[16:18] = l4_checksum(src, dst, 6, tcp, 16).to_bytes(2, "big")
        # IPv4: no options, DF, TTL 64, protocol 6.
        ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 20 + len(tcp),
                                   (ip_id + i) & 0xFFFF, 0x4000, 64, 6, 0, src, dst))
        ip[10:12] = ip_header_checksum(ip).to_bytes(2, "big")
        frames.append(eth + bytes(ip) + bytes(tcp))
    return frames


def _mac(text: str) -> bytes:
    b = bytes.fromhex(text.replace(":", ""))
    if len(b) != 6:
        raise ValueError(f"a MAC address has 6 bytes, got {text!r}")
    return b


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
