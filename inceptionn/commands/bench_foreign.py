"""Foreign DSCP-10 traffic: how often does RX decompress a frame that no TX engine made?

A host without the TX engine that marks its traffic with the compression DSCP (10 by
default) sends ordinary payloads. RX decompresses such a frame whenever its first payload
bytes pass the shim check; the frame is then mangled (a TCP segment fails its checksum,
is dropped and retransmitted with the same bytes, so it may be mangled again and again).
This measures the share of random TCP and UDP payloads that golden.rx_frame decompresses,
for a receiver that knows wire version 1 only, version 2 only, and both (the engine), and
prints a 95% interval for each rate.

    inceptionn bench foreign [--frames 100000] [--seed 0]
"""

from __future__ import annotations

import math
import struct
import time

import numpy as np

from inceptionn import golden
from inceptionn.golden.packet_matcher import IPPROTO_TCP, IPPROTO_UDP
from ..cli import CliError
from .checks import int_in

__all__ = ["foreign_frame", "measure", "expected_rates", "add_arguments", "run"]

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


def _interval(hits: int, n: int) -> tuple[float, float]:
    """95% Wilson score interval of a binomial rate."""
    if n == 0:
        return 0.0, 0.0
    z, p = 1.96, hits / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


RECEIVERS = {"version 1 only": (1,), "version 2 only": (2,), "both (the engine)": (1, 2)}


def measure(frames: int = 100_000, seed: int = 0, dscp: int = golden.DSCP_DEFAULT):
    """{receiver: (decompressed, malformed, frames)} over ``frames`` random payloads, half
    TCP (4..1460 bytes) and half UDP (4..1472 bytes), uniformly random bytes."""
    rng = np.random.default_rng(seed)
    out = {name: [0, 0, frames] for name in RECEIVERS}
    for i in range(frames):
        proto = "tcp" if i % 2 == 0 else "udp"
        size = int(rng.integers(4, (1460 if proto == "tcp" else 1472) + 1))
        f = foreign_frame(rng.bytes(size), proto, dscp)
        for name, versions in RECEIVERS.items():
            c = golden.Counters()
            golden.rx_frame(f, dscp=dscp, counters=c, versions=versions)
            out[name][0] += c.decompressed
            out[name][1] += c.malformed
    return {name: tuple(v) for name, v in out.items()}


def expected_rates():
    """The rates the acceptance rules give on uniformly random bytes, counted exactly over
    every payload size and L (the measurement's distribution): {receiver: rate}."""
    lengths = np.arange(1 << 16)
    n, r = lengths // 4, lengths % 4
    min_len = 4 + 2 * -(-n // 8) + r                       # payload.min_compressed_len
    v1 = v2 = 0.0
    for proto, p, top in (("tcp", 54, 1460), ("udp", 42, 1472)):
        for size in range(4, top + 1):
            ok = (lengths > size) & (p + lengths <= golden.MAX_FRAME_BYTES)
            w = 0.5 / (top - 3)                            # half the frames, sizes uniform
            v1 += w * ok.sum() / 65536 / 256               # byte 2 = 0xC5
            v2 += w * (ok & (min_len <= size)).sum() / 65536 / 256 * 16 / 256   # 0xC6, k 1..16
    return {"version 1 only": v1, "version 2 only": v2, "both (the engine)": v1 + v2}


def add_arguments(ap) -> None:
    """`inceptionn bench foreign`'s options."""
    ap.add_argument("--frames", type=int_in(1), default=100_000)
    ap.add_argument("--seed", type=int_in(0, 2**63 - 1), default=0)


def run(args) -> int:
    if args.frames < 1:
        raise CliError("--frames must be at least 1")
    t0 = time.monotonic()
    res = measure(args.frames, args.seed)
    print(f"{args.frames} random TCP/UDP payloads with DSCP 10 through golden.rx_frame "
          f"(seed {args.seed}, {time.monotonic() - t0:.0f} s)")
    exp = expected_rates()
    print(f"{'receiver':>18} | {'decompressed':>12} | {'rate':>9} | {'95% interval':>21} | "
          f"{'expected':>9} | malformed")
    for name, (hits, bad, n) in res.items():
        lo, hi = _interval(hits, n)
        print(f"{name:>18} | {hits:12d} | {hits / n:9.2e} | [{lo:8.2e}, {hi:8.2e}] | {exp[name]:9.2e} | {bad}")
    v1, v2 = res["version 1 only"][0], res["version 2 only"][0]
    print(f"version 2's acceptance rule takes {v2} where version 1's takes {v1}"
          + (f" ({v1 / v2:.0f}x fewer)" if v2 else ""))
    return 0
