"""The study's ring through the NIC's frames instead of the codec alone.

`FramesCodec` stands where a compressor's codec stands (encode -> bytes, decode(bytes,
n) -> values), but each chunk travels as the NIC carries it: the floats are cut into
UDP/IPv4 frames of at most `floats_per_frame` values tagged DSCP 10 (a 1448-byte payload
by default, the MSS the demo uses), each frame goes through the TX engine's model
(`golden.tx_frame`, wire format version 1 or 2 by `codec`), and on receipt the frame the
wire carried goes through the RX engine's model (`golden.rx_frame`), whose payload
gives the values. So a run with it trains on exactly what the engines deliver, shims,
fall-backs and the RX acceptance rule included, not on the codec's roundtrip.

The bytes it returns are what each frame's L4 payload was on the wire (compressed, or
raw where TX fell back), each behind a 2-byte word (bit 15: compressed; bits 14..0: the
payload's length) that stands for the frame boundary a real link keeps; a receiver
rebuilds the wire frame from it. The headers themselves are not counted, as everywhere
in the study (payload bytes only).
"""

from __future__ import annotations

import struct

import numpy as np

from inceptionn import golden
from inceptionn.golden.checksum import ip_header_checksum

__all__ = ["FramesCodec"]

_ETH = bytes.fromhex("020000000002" "020000000001") + b"\x08\x00"
_COMPRESSED = 0x8000


def _frame(payload: bytes, tos: int) -> bytes:
    """Ethernet / IPv4 / UDP (checksum 0: disabled, which TX keeps) around `payload`."""
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, tos, 28 + len(payload), 1, 0, 64, 17, 0,
                               bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2])))
    ip[10:12] = ip_header_checksum(bytes(ip)).to_bytes(2, "big")
    return _ETH + bytes(ip) + struct.pack("!HHHH", 6000, 6001, 8 + len(payload), 0) + payload


def _payload(frame: bytes) -> tuple[bytes, int]:
    """(UDP payload, ToS) of a frame built by _frame (after TX or RX)."""
    ihl = (frame[14] & 0x0F) * 4
    total = int.from_bytes(frame[16:18], "big")
    return frame[14 + ihl + 8:14 + total], frame[15]


class FramesCodec:
    """A codec whose bytes are the NIC's wire payloads (see the module docstring)."""

    def __init__(self, k: int, codec: str, floats_per_frame: int = 362):
        self.k, self.codec = golden.check_k(k, codec), golden.check_codec(codec)
        self.per = int(floats_per_frame)
        if not 1 <= self.per <= 2000:
            raise ValueError(f"floats_per_frame must be in 1..2000, got {floats_per_frame!r}")
        self.name = f"nic-{codec}{self.k}"
        self.tos = golden.DSCP_DEFAULT << 2

    def encode(self, v: np.ndarray) -> bytes:
        v = np.ascontiguousarray(v, dtype=np.float32).ravel()
        out = []
        for lo in range(0, v.size, self.per):
            host = _frame(v[lo:lo + self.per].astype("<f4").tobytes(), self.tos)
            wire = golden.tx_frame(host, k=self.k, codec=self.codec, impl=golden.fast.FAST)
            body, tos = _payload(wire)
            flag = _COMPRESSED if tos >> 2 == golden.DSCP_DEFAULT else 0
            out.append((flag | len(body)).to_bytes(2, "big") + body)
        return b"".join(out)

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        vals, pos = [], 0
        while pos < len(buf):
            word = int.from_bytes(buf[pos:pos + 2], "big")
            body = buf[pos + 2:pos + 2 + (word & 0x7FFF)]
            pos += 2 + len(body)
            tos = self.tos if word & _COMPRESSED else 0
            host, bad = golden.rx_frame(_frame(body, tos), impl=golden.fast.FAST,
                                        versions=(golden.CODEC_VERSION[self.codec],))
            if bad:
                raise ValueError("the RX engine flagged a frame of the ring as malformed")
            payload, _ = _payload(host)
            vals.append(np.frombuffer(payload, "<f4"))
        out = np.concatenate(vals) if vals else np.zeros(0, np.float32)
        if out.size != n:
            raise ValueError(f"the frames carried {out.size} values, expected {n}")
        return out.astype(np.float32)
