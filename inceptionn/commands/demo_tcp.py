"""The demo's real-TCP stage: the HDC gradients between two network namespaces through
the software NIC (`inceptionn nic bridge`), sent by the kernel's TCP stack.

Needs root (namespaces, TAP); elsewhere it reports why in one line and the demo goes on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import golden
from ..drivers.bridge import Bridge
from ..drivers.netns import netns_available
from ..drivers.nic_stream import stream_floats

__all__ = ["TcpRow", "tcp_stage", "format_tcp", "collectives_stage", "format_collectives"]


@dataclass
class TcpRow:
    mtu: int
    k: int
    nbytes: int
    seconds: float
    wire_ratio: float
    max_abs_error: float
    misaligned: int
    checksum_errors: int
    exact: bool

    @property
    def gbps(self):
        return self.nbytes * 8 / self.seconds / 1e9


def tcp_stage(x, k: int, mtus=(1500, 9000)) -> tuple[list[TcpRow], str | None]:
    """Stream `x` from host 0 to host 1 at each MTU; (rows, why skipped or None).
    Raises RuntimeError if the receiver's values are not the golden roundtrip."""
    why = netns_available()
    if why is not None:
        return [], why
    x = np.ascontiguousarray(x, dtype=np.float32)
    want = golden.roundtrip(x, k)
    rows = []
    for mtu in mtus:
        with Bridge(2, mtu=mtu, k=k) as br:
            res = stream_floats(br, 0, 1, x)
            c = br.counters()
            snmp = br.snmp(1)
        exact = np.array_equal(res.received.view(np.uint32), want.view(np.uint32))
        if not exact:
            raise RuntimeError(f"real TCP through the bridge at MTU {mtu}: the receiver's values "
                               "differ from the golden roundtrip")
        err = np.abs(res.received.astype(np.float64) - x.astype(np.float64))
        rows.append(TcpRow(mtu, k, x.nbytes, res.seconds, c[0]["wire_ratio"], float(err.max()),
                           c[0]["misaligned"], snmp["Tcp"]["InCsumErrors"] + snmp["Tcp"]["InErrs"],
                           exact))
    return rows, None


def format_tcp(rows: list[TcpRow]) -> str:
    lines = ["| MTU | MB | goodput Gb/s | wire ratio | max error | misaligned | TCP errors |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.mtu} | {r.nbytes / 1e6:.1f} | {r.gbps:.3f} | {r.wire_ratio:.2f}x | "
                     f"{r.max_abs_error:.2e} | {r.misaligned} | {r.checksum_errors} |")
    return "\n".join(lines)


def collectives_stage(rate_gbps: float = 0.1):
    """4 ranks exchange the HDC-sized gradients through the bridge: WA against INC+C
    (the ring, every hop compressed at 2^-10). (points, why skipped or None)."""
    why = netns_available()
    if why is not None:
        return [], why
    from ..bench.collectives import HDC_FLOATS, measure
    return [measure(m, 4, HDC_FLOATS, rate_gbps=rate_gbps, iters=1) for m in ("WA", "INC+C")], None


def format_collectives(points, rate_gbps: float = 0.1) -> str:
    wa, inc = points
    return (f"   4 workers, {wa.n_bytes / 1e6:.1f} MB of gradients each, wire {rate_gbps} Gb/s per "
            f"port: WA {wa.seconds:.2f} s and {wa.wire_per_worker / 1e6:.2f} MB on the wire per "
            f"worker; INC+C {inc.seconds:.2f} s and {inc.wire_per_worker / 1e6:.2f} MB: "
            f"{1 - inc.seconds / wa.seconds:.0%} less time (paper: 70.9-80.7% less "
            f"communication time, make bench-collectives for the full comparison)")
