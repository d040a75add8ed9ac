"""Goodput of a tagged TCP stream through the software NIC (`make bench-nic`).

For each MTU (1500, 9000), in one run, the same float32 stream (the demo's real HDC
gradients, tiled to --size) crosses:
  veth          a plain veth pair between two namespaces: the kernel's own limit here;
  bridge, off   the bridge with the engines disabled: the switch's own cost (TAP reads
                and writes, Python per frame);
  bridge, NIC   the bridge with the engines on (the `--engine`, golden by default).
Each row gives goodput (payload bits per second, as the receiving application reads
them), the ratio to the veth row, the wire ratio, and where the switch thread's time
went (TAP reads, TX engine, RX engine, TAP writes) as shares of the stream's wall time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

from . import demo, golden
from .bench import parse_size
from .drivers.bridge import Bridge
from .drivers.netns import Namespace, netns_available
from .drivers.nic_stream import stream_floats

__all__ = ["Row", "VethPair", "run_bench_nic", "format_rows", "main"]


class VethPair:
    """Two namespaces joined by a veth pair: the baseline with no userspace in the path.
    Offers what stream_floats needs of a Bridge (call, addr, mtu, dscp)."""

    def __init__(self, mtu: int, dscp: int = golden.DSCP_DEFAULT):
        self.mtu, self.dscp = mtu, dscp
        self._ns = []

    def __enter__(self):
        try:
            self._ns = [Namespace(), Namespace()]
            subprocess.run(["ip", "link", "add", "incv0", "netns", str(self._ns[0].pid), "type",
                            "veth", "peer", "name", "incv1", "netns", str(self._ns[1].pid)],
                           check=True, capture_output=True)
            for i, ns in enumerate(self._ns):
                ns.run(["ip", "link", "set", "dev", "lo", "up"])
                ns.run(["ip", "link", "set", "dev", f"incv{i}", "mtu", str(self.mtu), "up"])
                ns.run(["ip", "addr", "add", f"{self.addr(i)}/24", "dev", f"incv{i}"])
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        for ns in self._ns:    # the veth pair goes with its namespaces
            ns.close()
        self._ns = []

    def addr(self, i):
        return f"10.78.0.{i + 1}"

    def call(self, i, fn, *args, **kw):
        return self._ns[i].call(fn, *args, **kw)


@dataclass
class Row:
    setup: str
    mtu: int
    nbytes: int
    seconds: float
    wire_ratio: float = float("nan")
    timing: dict | None = None
    gbps_vs_veth: float = float("nan")

    @property
    def gbps(self):
        return self.nbytes * 8 / self.seconds / 1e9


def _check(received, want, what):
    if not np.array_equal(received.view(np.uint32), want.view(np.uint32)):
        raise RuntimeError(f"{what}: the receiver did not get the expected stream")


def run_bench_nic(size: int, mtus=(1500, 9000), k: int = golden.K_DEFAULT, engine="golden",
                  quiet=False) -> list[Row]:
    x = np.resize(demo.real_gradients(quiet=True).all(), size // 4)
    # The Verilated NIC here writes wire format version 1; the golden one golden's default.
    want = golden.roundtrip(x, k, "paper" if engine == "rtl" else golden.CODEC_DEFAULT)
    rows = []
    for mtu in mtus:
        with VethPair(mtu) as v:
            res = stream_floats(v, 0, 1, x)
        _check(res.received, x, f"veth {mtu}")
        rows.append(Row("veth", mtu, x.nbytes, res.seconds))
        for label, compress in (("bridge, off", False), (f"bridge, NIC ({engine})", True)):
            br = Bridge(2, mtu=mtu, k=k, engine=engine, compress=compress)
            with br:
                res = stream_floats(br, 0, 1, x)
                ratio = br.counters()[0]["wire_ratio"]
            _check(res.received, want if compress else x, f"{label} {mtu}")
            rows.append(Row(label, mtu, x.nbytes, res.seconds, ratio, br.timing()))
        if not quiet:
            print(f"  MTU {mtu} done", file=sys.stderr, flush=True)
    for r in rows:
        base = next(b for b in rows if b.mtu == r.mtu and b.setup == "veth")
        r.gbps_vs_veth = r.gbps / base.gbps
    return rows


def format_rows(rows: list[Row]) -> str:
    head = ("| setup | MTU | MB | goodput Gb/s | vs veth | wire ratio | switch: read | tx | rx "
            "| write | switch CPU |")
    lines = [head, "|" + "---|" * 11]
    for r in rows:
        t = r.timing or {}
        share = [f"{t[k] / r.seconds:.0%}" if k in t else "" for k in ("read", "tx", "rx", "write")]
        cpu = f"{t['switch_cpu'] / r.seconds:.0%}" if "switch_cpu" in t else ""
        ratio = f"{r.wire_ratio:.2f}x" if r.wire_ratio == r.wire_ratio else ""
        lines.append(f"| {r.setup} | {r.mtu} | {r.nbytes / 1e6:.0f} | {r.gbps:.3f} | "
                     f"{r.gbps_vs_veth:.3f} | {ratio} | " + " | ".join(share) + f" | {cpu} |")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m inceptionn.bench_nic", description=__doc__.split("\n")[0])
    p.add_argument("--size", default="64M", help="stream size (default 64M)")
    p.add_argument("--mtu", type=int, action="append", choices=(1500, 9000),
                   help="MTU, repeatable (default both)")
    p.add_argument("--error-bound", type=golden.parse_error_bound, default=golden.K_DEFAULT,
                   metavar="2^-K")
    p.add_argument("--engine", choices=("golden", "rtl"), default="golden")
    args = p.parse_args(argv)
    why = netns_available()
    if why is not None:
        print(f"bench-nic needs network namespaces: {why}", file=sys.stderr)
        return 2
    size = parse_size(args.size)
    t0 = time.perf_counter()
    rows = run_bench_nic(size, tuple(args.mtu or (1500, 9000)), args.error_bound, args.engine)
    print(f"tagged TCP stream of {size / 1e6:.0f} MB of HDC gradients, error bound "
          f"2^-{args.error_bound}, one stream, shares of the stream's wall time "
          f"({time.perf_counter() - t0:.0f} s in all)")
    print(format_rows(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
