"""Foreign DSCP-10 traffic: how often does RX decompress a frame that no TX engine made?

A host without the TX engine that marks its traffic with the compression DSCP (10 by
default) sends ordinary payloads. RX decompresses such a frame whenever its first payload
bytes pass the shim rules of a version it accepts; the frame is then mangled (a TCP
segment fails its checksum, is dropped and retransmitted with the same bytes, so it may
be mangled again and again). This measures the share of random TCP and UDP frames
(random addresses, ports, IP ID, sequence numbers and payload) that the compiled RX of
the software NIC (drivers/fastpath.rx_into) decompresses, for a receiver that accepts
wire version 1 only, 2 only, 3 only (the default) and all three, and, as a separate
row, how often version 3's check word alone passes (payloads whose first four bytes are
forced to a version-3 shim that passes every other rule). Each rate gets a 95% interval
(Wilson) and the rate the rules give, computed exactly. The first frames are also judged
by golden.rx_frame, which must agree frame for frame.

    inceptionn bench foreign [--frames 1000000] [--seed 0] [--threads 1] [--golden-check 2000]
"""

from __future__ import annotations

import concurrent.futures
import math
import struct

import numpy as np

from inceptionn import golden
from inceptionn.golden.packet_matcher import IPPROTO_TCP, IPPROTO_UDP

__all__ = ["foreign_frame", "measure", "expected_rates", "golden_agrees",
           "RECEIVERS", "FORCED"]


_ETH = bytes.fromhex("020000000002" "020000000001" "0800")


def foreign_frame(payload: bytes, proto: str, dscp: int = golden.DSCP_DEFAULT) -> bytes:
    """An Ethernet/IPv4/TCP or UDP frame carrying ``payload`` with ``dscp``, as a host with
    no TX engine sends it (checksums are not filled in: RX does not check them)."""
    if proto == "tcp":
        l4 = struct.pack("!HHIIBBHHH", 40000, 5000, 1, 0, 5 << 4, 0x18, 65535, 0, 0)
        num = IPPROTO_TCP
    else:
        l4 = struct.pack("!HHHH", 40000, 5000, 8 + len(payload), 0)
        num = IPPROTO_UDP
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, dscp << 2, 20 + len(l4) + len(payload), 1, 0x4000, 64,
                     num, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return _ETH + ip + l4 + payload


def wilson_interval(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    if n == 0:
        return 0.0, 0.0
    z, p = 1.96, hits / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


RECEIVERS = {"version 1 only": (1,), "version 2 only": (2,), "version 3 only (default)": (3,),
             "all three": (1, 2, 3)}


FORCED = "v3 check word alone"


def measure(frames: int = 1_000_000, seed: int = 0, dscp: int = golden.DSCP_DEFAULT,
            threads: int = 1):
    """{receiver: (decompressed, malformed, check_failed, frames judged)} over ``frames``
    random frames (drivers/foreign_frames.py), the RECEIVERS and the FORCED row."""
    from inceptionn.drivers import foreign_frames as ff
    masks = [golden.versions_mask(v) for v in RECEIVERS.values()] + [ff.V3_FORCED]
    ff.run(2, seed, dscp, masks)                       # compile (or load) before timing
    parts = [(frames * i // threads, frames * (i + 1) // threads) for i in range(threads)]
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        counts = sum(ex.map(lambda se: ff.run(se[1] - se[0], seed, dscp, masks, start=se[0]), parts))
    names = list(RECEIVERS) + [FORCED]
    return {name: tuple(int(x) for x in counts[i]) for i, name in enumerate(names)}


def golden_agrees(frames: int, seed: int = 0, dscp: int = golden.DSCP_DEFAULT) -> int:
    """Judge the first ``frames`` frames with golden.rx_frame too; returns how many were
    checked, raises RuntimeError on the first frame where the compiled RX differs."""
    from inceptionn.drivers import fastpath as fp
    from inceptionn.drivers import foreign_frames as ff
    for i in range(frames):
        f = ff.frame_at(seed, i, dscp)
        for versions in RECEIVERS.values():
            want = golden.rx_frame(f, dscp=dscp, versions=versions)
            buf = np.zeros(fp.FRAME_ROOM + 64, np.uint8)
            out = np.zeros(fp.FRAME_ROOM + 64, np.uint8)
            buf[:len(f)] = np.frombuffer(f, np.uint8)
            cnt = np.zeros((1, len(fp.COLUMNS)), np.int64)
            h, bad = fp.rx_into(buf, len(f), out, dscp, True, cnt, 0, fp.tables(),
                                golden.versions_mask(versions))
            if (bytes(out[:h]), bool(bad)) != want:
                raise RuntimeError(f"frame {i}: compiled RX differs from golden.rx_frame "
                                   f"(versions {versions})")
    return frames


def expected_rates():
    """The rates the acceptance rules give on the measurement's frames (half TCP with
    4..1460 payload bytes, half UDP with 4..1472, sizes and bytes uniform), counted
    exactly over every size and L: {receiver: rate}, FORCED included (2^-32)."""
    lengths = np.arange(1 << 16)
    n, r = lengths // 4, lengths % 4
    groups = 2 * -(-n // 8) + r
    rate = {1: 0.0, 2: 0.0, 3: 0.0}
    for proto, p, top in (("tcp", 54, 1460), ("udp", 42, 1472)):
        for size in range(4, top + 1):
            ok = (lengths > size) & (p + lengths <= golden.MAX_FRAME_BYTES)
            w = 0.5 / (top - 3) / 65536 / 256              # half the frames, sizes uniform; magic
            rate[1] += w * ok.sum()
            rate[2] += w * (ok & (4 + groups <= size)).sum() * 16 / 256          # k 1..16
            rate[3] += w * (ok & (8 + groups <= size)).sum() * 16 / 256 * 2.0 ** -32
    out = {name: sum(rate[v] for v in vs) for name, vs in RECEIVERS.items()}
    out[FORCED] = 2.0 ** -32
    return out
