"""Goodput of a tagged TCP stream through the software NIC (`make bench-nic`).

For each MTU (9000, 1500), in one run, the same float32 stream (the demo's real HDC
gradients, tiled to --size) goes from a sender process in one namespace to a receiver
process in another (both `inceptionn bench nic --peer ...`, a gradient socket
each: nothing shares the switch's process or GIL), across:
  veth          a plain veth pair: the kernel's own limit here;
  bare fwd      two TAP devices joined by the simplest Python forwarder (poll, read,
                write; no MAC table, no engines): what any userspace switch pays;
  bridge, off   the bridge with the engines disabled: the switch's own cost;
  bridge, NIC   the bridge with the engines on (compressing, golden-exact).
Each row gives goodput (payload bits per second, as the receiving application reads
them, from accept() to its last byte), the ratio to the veth row and the wire ratio; the
receiver's bytes are checked (the golden roundtrip with the engines on, the stream
itself otherwise). The targets are printed next to the figures; they are not asserted
(a shared machine's load moves them; `uptime` is printed with them).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import numpy as np

from .. import golden, gradients
from ..drivers.bridge import Bridge
from ..drivers.netns import Namespace, open_tap
from ..drivers.nic_stream import gradient_mss

__all__ = ["Row", "VethPair", "BareForwarder", "run_bench_nic", "format_rows", "format_targets"]


# The targets, engines on: Gb/s by MTU; at least the bare forwarder; within 2x
# of engines off.
TARGET_GBPS = {9000: 4.0, 1500: 1.5}


PEER_PORT = 5300


class VethPair:
    """Two namespaces joined by a veth pair: the baseline with no userspace in the path."""

    def __init__(self, mtu: int):
        self.mtu, self._ns = mtu, []

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

    def popen(self, i, argv, **kw):
        return subprocess.Popen(self._ns[i].cmd(argv), **kw)


class BareForwarder:
    """Two namespaces, a TAP each, and the simplest Python loop that joins them: read
    a frame from one TAP, write it to the other (a thread of this process)."""

    def __init__(self, mtu: int):
        self.mtu, self._ns, self._fds, self._thread = mtu, [], [], None
        self.frames = 0

    def __enter__(self):
        try:
            tag = f"{os.getpid() % 100000:05d}"
            for i in range(2):
                ns = Namespace()
                self._ns.append(ns)
                self._fds.append(open_tap(f"ib{tag}h{i}", ns, mtu=self.mtu,
                                          addr=f"{self.addr(i)}/24", mac=f"02:42:46:00:00:{i + 1:02x}",
                                          ns_name="fwd0"))
            self._stop_r, self._stop_w = os.pipe()
            self._thread = threading.Thread(target=self._loop, daemon=True)
            self._thread.start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _loop(self):
        p = select.poll()
        for fd in (*self._fds, self._stop_r):
            p.register(fd, select.POLLIN)
        while True:
            for fd, _ in p.poll():
                if fd == self._stop_r:
                    return
                other = self._fds[1 - self._fds.index(fd)]
                for _ in range(64):
                    try:
                        f = os.read(fd, 65536)
                    except BlockingIOError:
                        break
                    try:
                        os.write(other, f)
                        self.frames += 1
                    except OSError:
                        pass

    def __exit__(self, *exc):
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join()
            os.close(self._stop_r)
            os.close(self._stop_w)
            self._thread = None
        for fd in self._fds:
            os.close(fd)
        for ns in self._ns:
            ns.close()
        self._fds, self._ns = [], []

    def addr(self, i):
        return f"10.79.0.{i + 1}"

    def popen(self, i, argv, **kw):
        return subprocess.Popen(self._ns[i].cmd(argv), **kw)


def peer(args):
    from ..drivers import sockets
    if args.peer == "recv":
        s = sockets.gradient_socket(mss=args.mss, dscp=args.dscp)
        s.settimeout(120)
        s.bind((args.addr, args.port))
        s.listen(1)
        print("ready", flush=True)
        conn, _ = s.accept()
        conn.settimeout(120)
        out = np.empty(args.count, np.float32)
        t0 = time.perf_counter()
        sockets.recv_floats_into(conn, out)
        seconds = time.perf_counter() - t0
        np.save(args.file, out)
        print(json.dumps({"seconds": seconds}), flush=True)
        return 0
    x = np.load(args.file)
    deadline = time.monotonic() + 30
    while True:
        s = sockets.gradient_socket(mss=args.mss, dscp=args.dscp)
        s.settimeout(120)
        try:
            s.connect((args.addr, args.port))
            break
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    sockets.send_floats(s, x)
    s.close()
    return 0


def _stream(net, x_path, out_path, n, mtu, dscp):
    """One stream from host 0 to host 1 of `net` (processes in the namespaces); seconds."""
    me = [sys.executable, "-m", "inceptionn", "bench", "nic", "--peer"]
    common = ["--mss", str(gradient_mss(mtu)), "--dscp", str(dscp), "--addr", net.addr(1)]
    recv = net.popen(1, me + ["recv", "--file", out_path, "--count", str(n)] + common,
                     stdout=subprocess.PIPE, text=True)
    try:
        if recv.stdout.readline().strip() != "ready":
            raise RuntimeError("the receiver did not start")
        send = net.popen(0, me + ["send", "--file", x_path] + common)
        out, _ = recv.communicate(timeout=600)
        if send.wait(timeout=60) or recv.returncode:
            raise RuntimeError(f"sender {send.returncode}, receiver {recv.returncode}")
    finally:
        for p in (recv,):
            if p.poll() is None:
                p.kill()
                p.wait()
    return json.loads(out.strip().splitlines()[-1])["seconds"]


@dataclass
class Row:
    setup: str
    mtu: int
    nbytes: int
    seconds: float
    wire_ratio: float = float("nan")
    cpu: float = float("nan")           # switch CPU seconds (all workers)
    gbps_vs_veth: float = float("nan")

    @property
    def gbps(self):
        return self.nbytes * 8 / self.seconds / 1e9


def run_bench_nic(size: int, mtus=(9000, 1500), k: int = golden.K_DEFAULT,
                  codec: str = golden.CODEC_DEFAULT, quiet=False, workers=None) -> list[Row]:
    x = np.resize(gradients.real_gradients(quiet=True).all(), size // 4).astype(np.float32)
    want = golden.roundtrip(x, k, codec)
    rows = []
    dscp = golden.DSCP_DEFAULT
    with tempfile.TemporaryDirectory(prefix="bench-nic-") as tmp:
        x_path, out_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "got.npy")
        np.save(x_path, x)

        def check(expect, what):
            got = np.load(out_path)
            if not np.array_equal(got.view(np.uint32), expect.view(np.uint32)):
                raise RuntimeError(f"{what}: the receiver did not get the expected stream")

        for mtu in mtus:
            for label, make in (("veth", VethPair), ("bare fwd", BareForwarder)):
                with make(mtu) as net:
                    secs = _stream(net, x_path, out_path, x.size, mtu, dscp)
                check(x, f"{label} {mtu}")
                rows.append(Row(label, mtu, x.nbytes, secs))
            for label, compress in (("bridge, off", False), ("bridge, NIC", True)):
                br = Bridge(2, mtu=mtu, k=k, codec=codec, compress=compress, workers=workers)
                with br:
                    secs = _stream(br, x_path, out_path, x.size, mtu, dscp)
                    ratio = br.counters()[0]["wire_ratio"]
                check(want if compress else x, f"{label} {mtu}")
                rows.append(Row(label, mtu, x.nbytes, secs, ratio, br.timing().get("switch_cpu", float("nan"))))
            if not quiet:
                print(f"  MTU {mtu} done", file=sys.stderr, flush=True)
    for r in rows:
        base = next(b for b in rows if b.mtu == r.mtu and b.setup == "veth")
        r.gbps_vs_veth = r.gbps / base.gbps
    return rows


def format_rows(rows: list[Row]) -> str:
    head = "| setup | MTU | MB | goodput Gb/s | vs veth | wire ratio | switch CPU s |"
    lines = [head, "|" + "---|" * 7]
    for r in rows:
        ratio = f"{r.wire_ratio:.2f}x" if r.wire_ratio == r.wire_ratio else ""
        cpu = f"{r.cpu:.2f}" if r.cpu == r.cpu else ""
        lines.append(f"| {r.setup} | {r.mtu} | {r.nbytes / 1e6:.0f} | {r.gbps:.3f} | "
                     f"{r.gbps_vs_veth:.3f} | {ratio} | {cpu} |")
    return "\n".join(lines)


def format_targets(rows: list[Row]) -> str:
    """The targets, engines on, next to what this run measured (not asserted)."""
    out = ["| MTU | target | measured | met |", "|---|---|---|---|"]
    for mtu in sorted({r.mtu for r in rows}, reverse=True):
        get = {r.setup: r for r in rows if r.mtu == mtu}
        on, off, bare = get["bridge, NIC"], get["bridge, off"], get["bare fwd"]
        for target, measured, met in (
                (f">= {TARGET_GBPS.get(mtu, float('nan'))} Gb/s", f"{on.gbps:.2f} Gb/s",
                 on.gbps >= TARGET_GBPS.get(mtu, float("inf"))),
                (">= bare forwarder", f"{on.gbps:.2f} vs {bare.gbps:.2f} Gb/s", on.gbps >= bare.gbps),
                ("within 2x of engines off", f"{on.gbps:.2f} vs {off.gbps:.2f} Gb/s "
                 f"({off.gbps / on.gbps:.2f}x)", on.gbps * 2 >= off.gbps)):
            out.append(f"| {mtu} | {target} | {measured} | {'yes' if met else 'no'} |")
    return "\n".join(out)


def uptime():
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
