"""Ethernet frame builders (scapy) shared by the engine testbenches, TX and RX.

Every builder returns the frame as ``bytes`` exactly as a MAC hands it to the engine:
no preamble, no FCS, no minimum-size padding unless asked for (``pad_to``). The
defaults make an *eligible* frame (ToS 0x28 = DSCP 10); the keyword arguments reach
every eligibility corner of the spec (section 4).
"""

import random
import struct
from pathlib import Path

import numpy as np

from inceptionn.golden.checksum import ip_header_checksum
from inceptionn.golden.wire import TOS_DEFAULT

__all__ = [
    "SRC_MAC", "DST_MAC", "udp_frame", "tcp_frame", "ipv4_frame", "arp_frame",
    "ipv6_frame", "fragment_frame", "raw_frame", "float_payload", "special_payload",
    "incompressible_payload", "gradient_values", "payload_frame", "mixed_frames",
]

SRC_MAC = "02:00:00:00:00:01"
DST_MAC = "02:00:00:00:00:02"

# Fixed addresses and ports keep the frames reproducible across runs.
_SRC_IP, _DST_IP = "10.0.0.1", "10.0.0.2"


def _scapy():
    # scapy is slow to import; load it once, on first use.
    from scapy.layers.inet import IP, TCP, UDP, IPOption
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import ARP, Dot1Q, Ether
    return Ether, Dot1Q, IP, TCP, UDP, IPOption, IPv6, ARP


def _ether(vlan):
    Ether, Dot1Q, *_ = _scapy()
    eth = Ether(src=SRC_MAC, dst=DST_MAC)
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan)
    return eth


def _ip(tos, ip_options, ident=1, flags=0, frag=0, proto=None):
    _, _, IP, _, _, IPOption, _, _ = _scapy()
    kw = dict(src=_SRC_IP, dst=_DST_IP, tos=tos, id=ident, flags=flags, frag=frag)
    if proto is not None:
        kw["proto"] = proto
    if ip_options:
        if len(ip_options) % 4:
            raise ValueError("IP options must be a multiple of 4 bytes")
        kw["options"] = [IPOption(bytes(ip_options))]
    return IP(**kw)


def _pad(frame, pad_to):
    if pad_to and len(frame) < pad_to:
        frame += bytes(pad_to - len(frame))
    return frame


def udp_frame(payload, *, tos=TOS_DEFAULT, vlan=None, ip_options=b"", checksum=True,
              sport=5000, dport=5001, pad_to=0):
    """IPv4/UDP frame. ``checksum=False`` sends a UDP checksum of 0 (disabled)."""
    UDP = _scapy()[4]
    udp = UDP(sport=sport, dport=dport) if checksum else UDP(sport=sport, dport=dport, chksum=0)
    pkt = _ether(vlan) / _ip(tos, ip_options) / udp / bytes(payload)
    return _pad(bytes(pkt), pad_to)


def tcp_frame(payload, *, tos=TOS_DEFAULT, vlan=None, ip_options=b"", tcp_options=(),
              sport=5000, dport=5001, seq=1000, pad_to=0):
    """IPv4/TCP frame; ``tcp_options`` is a scapy option list, e.g. [("MSS", 1460)]."""
    TCP = _scapy()[3]
    tcp = TCP(sport=sport, dport=dport, seq=seq, flags="PA", options=list(tcp_options))
    pkt = _ether(vlan) / _ip(tos, ip_options) / tcp / bytes(payload)
    return _pad(bytes(pkt), pad_to)


def ipv4_frame(payload, *, proto=47, tos=TOS_DEFAULT, vlan=None, pad_to=0):
    """IPv4 frame with a non-TCP/UDP protocol (GRE by default): never eligible."""
    pkt = _ether(vlan) / _ip(tos, b"", proto=proto) / bytes(payload)
    return _pad(bytes(pkt), pad_to)


def fragment_frame(payload, *, more_fragments=True, offset=0, tos=TOS_DEFAULT, udp=True):
    """A UDP (or TCP) frame with MF and/or a fragment offset set: not eligible."""
    frame = bytearray(udp_frame(payload, tos=tos) if udp else tcp_frame(payload, tos=tos))
    flags_frag = (0x2000 if more_fragments else 0) | (offset & 0x1FFF)
    frame[20:22] = struct.pack(">H", flags_frag)
    frame[24:26] = struct.pack(">H", ip_header_checksum(bytes(frame[14:34])))
    return bytes(frame)


def arp_frame():
    Ether, _, _, _, _, _, _, ARP = _scapy()
    return bytes(Ether(src=SRC_MAC, dst="ff:ff:ff:ff:ff:ff") /
                 ARP(psrc=_SRC_IP, pdst=_DST_IP, hwsrc=SRC_MAC))


def ipv6_frame(payload):
    Ether, _, _, _, UDP, _, IPv6, _ = _scapy()
    return bytes(Ether(src=SRC_MAC, dst=DST_MAC) / IPv6(src="fd00::1", dst="fd00::2", tc=TOS_DEFAULT) /
                 UDP(sport=5000, dport=5001) / bytes(payload))


def raw_frame(length, seed=0):
    """Random bytes (runts, garbage EtherTypes)."""
    return random.Random(seed).randbytes(length)


def float_payload(values):
    """float32 values -> little-endian payload bytes."""
    return np.asarray(values, dtype="<f4").tobytes()


def special_payload():
    """NaN, Inf, denormals, signed zeros and values at every band edge (k = 10)."""
    bits = [0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000, 0x00000001, 0x807FFFFF,
            0x00000000, 0x80000000, 0x3F800000, 0xBF800000, 0x3F7FFFFF, 0x3A800000,
            0x3A7FFFFF, 0xBA800000, 0x3C000000, 0x3BFFFFFF, 0x3E000000, 0x3DFFFFFF,
            0x3E800001, 0x3D800000, 0x7F7FFFFF, 0x00800000]
    return np.asarray(bits, dtype="<u4").tobytes()


def incompressible_payload(nbytes, seed=0):
    """Values with |x| >= 1 everywhere: every value keeps 32 bits, |C| > L (fall-back)."""
    rng = np.random.default_rng(seed)
    vals = rng.uniform(1.0, 1000.0, size=(nbytes + 3) // 4).astype("<f4")
    return vals.tobytes()[:nbytes]


def gradient_values(count, seed=0, demo_dir=None):
    """(float32 values, source) — real gradients from the demo's .npy files when present
    under ``demo_dir``, else N(0, 1e-3) samples; ``source`` says which, for the log."""
    if demo_dir is not None:
        files = sorted(Path(demo_dir).glob("*.npy"))
        if files:
            arrays = []
            total = 0
            for f in files:
                a = np.load(f).astype(np.float32).ravel()
                if a.size:
                    arrays.append(a)
                    total += a.size
                if total >= count:
                    break
            if arrays:
                vals = np.concatenate(arrays)
                reps = -(-count // vals.size)
                return np.tile(vals, reps)[:count], f"real gradients ({len(arrays)} file(s))"
    rng = np.random.default_rng(seed)
    return rng.normal(0.0, 1e-3, size=count).astype(np.float32), "synthetic N(0, 1e-3)"


def payload_frame(rng, length, *, kind=None):
    """One frame with an L-byte payload of random structure (protocol, VLAN, options)."""
    kind = kind or rng.choice(["udp", "udp0", "tcp", "tcpopt", "vlan", "ipopt"])
    vals = np.asarray(np.random.default_rng(rng.randrange(1 << 30)).normal(0, 1e-3, (length + 3) // 4),
                      dtype="<f4")
    payload = vals.tobytes()[:length]
    if kind == "udp":
        return udp_frame(payload)
    if kind == "udp0":
        return udp_frame(payload, checksum=False)
    if kind == "tcp":
        return tcp_frame(payload)
    if kind == "tcpopt":
        return tcp_frame(payload, tcp_options=[("MSS", 1460), ("NOP", None), ("NOP", None),
                                               ("Timestamp", (1, 2))])
    if kind == "vlan":
        return udp_frame(payload, vlan=rng.randrange(1, 4095))
    if kind == "ipopt":
        return tcp_frame(payload, ip_options=b"\x94\x04\x00\x00" * rng.randrange(1, 11))
    raise ValueError(f"unknown frame kind {kind!r}")


def mixed_frames(seed, count, *, max_payload=1500, jumbo=0.02):
    """A reproducible mix for stress runs: eligible frames of every shape and length,
    non-eligible traffic, padded runts, incompressible payloads, jumbos, tuser-marked
    frames. Returns a list of (bytes, tuser)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        r = rng.random()
        if r < 0.03:
            frame = raw_frame(rng.randrange(1, 80), rng.randrange(1 << 30))
        elif r < 0.05:
            frame = arp_frame()
        elif r < 0.07:
            frame = udp_frame(float_payload(np.zeros(4)), tos=rng.choice([0, 0x29, 0x2B, 0xB8]))
        elif r < 0.09:
            frame = udp_frame(incompressible_payload(rng.randrange(4, 400), rng.randrange(1 << 30)))
        elif r < 0.09 + jumbo:
            frame = payload_frame(rng, rng.randrange(8000, 8973), kind="udp")
        elif r < 0.14:
            frame = udp_frame(bytes(rng.randrange(0, 18)), pad_to=60)
        else:
            length = rng.randrange(0, max_payload) if rng.random() < 0.7 else rng.randrange(0, 120)
            frame = payload_frame(rng, length)
        out.append((frame, rng.random() < 0.03))
    return out
