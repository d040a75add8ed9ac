"""The INCEPTIONN NIC in software, in the data path of real kernel traffic.

N hosts (network namespaces, 2 to 8) each get a TAP device; one userspace switch joins
the TAPs. The port of host i runs the TX engine on every frame host i sends and the RX
engine on every frame delivered to it, so the wire between the ports carries compressed
frames, exactly as between two INCEPTIONN NICs on a switch. The switch learns MACs and
forwards ARP, IPv6 and everything else unchanged (the engines bypass what they do not
match)::

    with Bridge(hosts=2, mtu=9000, k=10) as br:
        br.run(1, "python3 receiver.py")      # or br.popen(...), br.call(i, fn)
        br.addr(1)                            # "10.77.0.2"
        br.counters()                         # per port, see NicPort.counters

Options: `rate_gbps` (token bucket per port on the bytes it puts on the wire, so
compression shows up as time saved), `drop` (lose that fraction of wire frames, seeded),
`pcap_wire` / `pcap_host` (Wireshark-readable captures of the wire and of what the
hosts sent and received), `engine` ("golden" or "rtl"), `compress=False` (the same
bridge with the engines disabled: its own overhead), `deliver_flagged` (hand frames the
RX engine flags bad to the host instead of dropping them, as a driver would), `codec`
("bounded", the default, or "paper": version 1, the paper's codec), `version` (the wire
version TX writes: the codec's by default, 3 for bounded, 2 for a receiver that predates
version 3), `versions` (those RX accepts: by default the one TX writes, so version 3
only, or 1 with codec="paper"; the RTL engine implements 1 and 2 and defaults to them), `impl` ("fast": the golden engine's payload work compiled, byte for
byte the NumPy model; "numpy": the NumPy model itself).

The switch: by default the compiled one (drivers/nic_workers.py, drivers/fastpath.py):
a worker thread per port, parse, match, rewrite, checksums, codec and TAP I/O compiled
and run without the GIL, checked against golden frame for frame by the tests and, with
`check_every=N`, on every N-th live frame; with captures, every frame is handed to
Python to be written. `offload` (None: where it can; True: required; False: never)
gives the TAPs virtio-net headers with checksum and TCP segmentation offload, so each
host's kernel hands the switch 64 KB TCP segments, which the switch cuts into MTU
frames before TX as a NIC's TSO does, and a receiver's frames of one TCP segment go to
it in one write (drivers/tso.py; the compiled switch without captures only: what
crosses the wire is the same MTU frames either way). A rate limit is paced by each
port's worker, on the link from the host and on the link into it (many ports sending to one host share its rate). A
lossy wire, the RTL engine or impl="numpy" need the Python loop below (`switch="python"`
forces it; it paces a rate limit too, frame by frame, on the link from each host only).

Nothing outlives the bridge: every command started in a host (`run`, `popen`) gets its
own process group, and a reaper process (drivers/reaper.py) kills those groups and
every process left in the hosts' namespaces when the bridge closes or its process dies,
by any signal, kill -9 included; the namespaces and TAP devices go with them. A Bridge
may be made, used and closed from any thread.

No host can stop or mislead the switch: a port whose TAP refuses a frame (a host whose
link is down: EIO) drops and counts it; each host's MAC is pinned to its port, so a
frame with another host's source MAC is dropped and counted (`forged`); other source
MACs are learned with aging and a size limit (drivers/mac_table.py).
"""

from __future__ import annotations

import collections
import itertools
import os
import random
import select
import shlex
import signal
import subprocess
import threading
import time

from .. import golden
from ..golden.pcap import PcapError, PcapWriter
from . import fastpath as fp
from .mac_table import FLOOD, FORGED, MacTable
from .netns import Namespace, OffloadRefused, Reaper, open_tap
from .nic_port import ENGINES, IMPLS, NicPort
from .nic_workers import CompiledSwitch

__all__ = ["Bridge", "BridgeError", "MAX_HOSTS", "IFNAME"]

MAX_HOSTS = 16           # P = 8 workers and an aggregator, and room to spare
MTUS = (1500, 9000)
RATE_GBPS = (0.001, 1000.0)   # a slower wire would hold a frame for seconds
_READ_BATCH = 64          # frames read from one TAP before moving on
_QUEUE_LIMIT = 2 << 20    # wire bytes queued behind a rate-limited port before it stops reading
_SUBNET = "10.77.0"
IFNAME = "nic0"                   # every host's interface, inside its namespace
_BRIDGE_IDS = itertools.count()   # TAP names stay unique across bridges of one process


class BridgeError(RuntimeError):
    """The switch stopped on an error (RTL mismatch, a TAP that went away)."""


class _Egress:
    """Frames a port has put on the wire, in order, each with the time it is through."""

    def __init__(self, rate_bps):
        self.rate_bps = rate_bps
        self.queue = collections.deque()
        self.queued_bytes = 0
        self.free_at = 0.0

    def push(self, now, frame):
        start = max(now, self.free_at)
        # Wire time of the frame: bytes + preamble, FCS and inter-frame gap (24).
        done = start + (len(frame) + 24) * 8 / self.rate_bps if self.rate_bps else start
        self.free_at = done
        self.queue.append((done, frame))
        self.queued_bytes += len(frame)

    def due(self, now):
        out = []
        while self.queue and self.queue[0][0] <= now:
            _, f = self.queue.popleft()
            self.queued_bytes -= len(f)
            out.append(f)
        return out


class Bridge:
    def __init__(self, hosts: int = 2, *, mtu: int = 1500, k: int = golden.K_DEFAULT,
                 dscp: int = golden.DSCP_DEFAULT, rate_gbps: float | None = None,
                 engine: str = "golden", compress: bool = True, pcap_wire=None, pcap_host=None,
                 drop: float = 0.0, seed: int = 0, deliver_flagged: bool = False,
                 codec: str | None = None, impl: str = "fast", mac_limit: int = 1024,
                 mac_age: float = 300.0, switch: str = "auto", check_every: int = 0,
                 workers: int | None = None, version: int | None = None, versions=None,
                 offload: bool | None = None):
        if isinstance(hosts, bool) or not isinstance(hosts, int) or not 2 <= hosts <= MAX_HOSTS:
            raise ValueError(f"hosts must be an integer in 2..{MAX_HOSTS}, got {hosts!r}")
        if mtu not in MTUS:
            raise ValueError(f"mtu must be one of {MTUS}, got {mtu!r}")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
        if rate_gbps is not None and not (isinstance(rate_gbps, (int, float))
                                          and RATE_GBPS[0] <= rate_gbps <= RATE_GBPS[1]):
            raise ValueError(f"rate_gbps must be None or a number of Gb/s in "
                             f"{RATE_GBPS[0]}..{RATE_GBPS[1]}, got {rate_gbps!r}")
        if not (isinstance(drop, (int, float)) and 0.0 <= drop < 1.0):
            raise ValueError(f"drop must be a fraction in [0, 1), got {drop!r}")
        codec = golden.CODEC_DEFAULT if codec is None else codec
        self.codec = golden.check_codec(codec)
        self.hosts, self.mtu, self.k, self.dscp = hosts, mtu, golden.check_k(k, codec), golden.check_dscp(dscp)
        # Checked now (NicPort checks them again against the engine) so bad options fail
        # before any namespace exists.
        self.version = None if version is None else golden.payload.check_version(version, self.codec)
        self.versions = None if versions is None else golden.check_versions(versions)
        self.rate_gbps, self.engine, self.compress, self.drop = rate_gbps, engine, compress, float(drop)
        self.deliver_flagged = bool(deliver_flagged)
        if impl not in IMPLS:
            raise ValueError(f"impl must be one of {IMPLS}, got {impl!r}")
        self.impl = impl
        if isinstance(check_every, bool) or not isinstance(check_every, int) or check_every < 0:
            raise ValueError(f"check_every must be an integer >= 0, got {check_every!r}")
        self.check_every = check_every
        python_only = [why for why, on in (("a lossy wire", drop),
                                           ("the RTL engine", engine == "rtl"),
                                           ("impl='numpy'", impl == "numpy")) if on]
        if switch not in ("auto", "compiled", "python"):
            raise ValueError(f"switch must be 'auto', 'compiled' or 'python', got {switch!r}")
        if switch == "compiled" and python_only:
            raise ValueError(f"the compiled switch does not do {', '.join(python_only)}")
        self.switch = "python" if switch == "python" or python_only else "compiled"
        if check_every and self.switch != "compiled":
            raise ValueError("check_every is a check of the compiled switch")
        self._cs: CompiledSwitch | None = None
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or not 1 <= workers <= hosts):
            raise ValueError(f"workers must be an integer in 1..{hosts}, got {workers!r}")
        self.workers = workers
        if offload not in (None, True, False):
            raise ValueError(f"offload must be None, True or False, got {offload!r}")
        can = self.switch == "compiled" and pcap_wire is None and pcap_host is None
        if offload and not can:
            raise ValueError("offload needs the compiled switch without captures")
        self._want_offload = offload
        self.offload = can and offload is not False     # until the kernel says otherwise
        self._macs = MacTable({}, limit=mac_limit, age=mac_age)   # checks both now
        self._reaper = None
        self._pcap_paths = (pcap_wire, pcap_host)
        self._rng = random.Random(seed)
        self._ns: list[Namespace] = []
        self._fds: list[int] = []
        self.ifnames: list[str] = []     # host i's interface name (inside its namespace)
        self.ports: list[NicPort] = []
        self._thread = None
        self._error: BaseException | None = None
        self._stop_r = self._stop_w = None
        self._lock = threading.Lock()
        self._pcaps = [None, None]
        self._inject = collections.deque()
        self._time = dict.fromkeys(("read", "tx", "rx", "write"), 0.0)
        self._cpu = 0.0
        self._final: list[dict] = []

    # ------------------------------------------------------------------ set-up

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb):
        err = self.close()
        if err is not None and exc_type is None:
            raise BridgeError(f"switch stopped: {err}") from err

    def start(self):
        try:
            # The captures first: a path that cannot be written fails before any host exists.
            for which, path in enumerate(self._pcap_paths):
                if path is not None:
                    self._pcaps[which] = PcapWriter(path)
            self._reaper = Reaper()
            tag = f"{os.getpid() % 100000:05d}{next(_BRIDGE_IDS) % 100:02d}"
            for i in range(self.hosts):
                ns = Namespace()
                self._ns.append(ns)
                self._reaper.watch_namespace(ns)
                # TAP names need only be unique while they sit in the root namespace.
                fd = self._open_tap(i, tag, ns)
                self._fds.append(fd)
                self.ifnames.append(IFNAME)
                # IPv6 too (bypassed by the engines, forwarded unchanged); no DAD wait.
                ns.run(["ip", "-6", "addr", "add", f"{self.addr6(i)}/64", "dev",
                        self.ifnames[-1], "nodad"])
                self.ports.append(NicPort(i, k=self.k, dscp=self.dscp, engine=self.engine,
                                          enable=self.compress, impl=self.impl,
                                          codec=self.codec, version=self.version,
                                          versions=self.versions))
            self._macs = MacTable({bytes.fromhex(self.mac(i).replace(":", "")): i
                                   for i in range(self.hosts)},
                                  limit=self._macs.limit, age=self._macs.age)
            self._stop_r, self._stop_w = os.pipe()
            if self.switch == "compiled":
                self._cs = CompiledSwitch(
                    fds=self._fds, macs=[self.mac(i) for i in range(self.hosts)],
                    macs_table=self._macs, lock=self._lock, k=self.k, codec=self.codec,
                    dscp=self.dscp, enable=self.compress, deliver_flagged=self.deliver_flagged,
                    check_every=self.check_every, stop_fd=self._stop_r,
                    pcaps=tuple(self._pcaps), workers=self.workers,
                    version=self.ports[0].version, versions=self.ports[0].versions,
                    rate_bps=self.rate_gbps * 1e9 if self.rate_gbps else None,
                    frame_bytes=self.mtu + 14, vnet=self.offload)
                self._cs.start()
            else:
                self._thread = threading.Thread(target=self._switch, name="inceptionn-bridge",
                                                daemon=True)
                self._thread.start()
        except BaseException:
            self.close()
            raise
        return self

    def _open_tap(self, i, tag, ns):
        """Host i's TAP, with offloads while self.offload; if the kernel refuses them on
        the first host and they were not required, every host goes without."""
        kw = dict(mtu=self.mtu, addr=f"{self.addr(i)}/24", mac=self.mac(i), ns_name=IFNAME)
        try:
            return open_tap(f"i{tag}h{i}", ns, offload=self.offload, **kw)
        except OffloadRefused:
            if self._want_offload or i > 0:
                raise
            self.offload = False
            return open_tap(f"i{tag}h{i}", ns, **kw)

    def close(self):
        """Stop the switch, remove every host; returns the switch's error, if any."""
        if self._thread is not None:
            os.write(self._stop_w, b"x")
            self._thread.join()
            self._thread = None
        if self._cs is not None:
            if self._cs._threads:
                os.write(self._stop_w, b"x")
                self._cs.join()
            self._cpu = self._cs.cpu
            self._error = self._error or self._cs.error
            self._final = self._compiled_counters()
            self._cs = None
        for fd in (self._stop_r, self._stop_w):
            if fd is not None:
                os.close(fd)
        self._stop_r = self._stop_w = None
        if self._reaper is not None:
            self._reaper.close()        # every process started in a host, and the holders
            self._reaper = None
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        self.ifnames = []
        for ns in self._ns:
            ns.close()
        self._ns = []
        for p in self.ports:
            p.close()
        for i, w in enumerate(self._pcaps):
            if w is not None:
                try:
                    w.close()
                except PcapError as e:      # a full disk: the capture's last bytes lost
                    self._error = self._error or e
            self._pcaps[i] = None
        return self._error

    # ------------------------------------------------------------------ hosts

    def addr(self, i: int) -> str:
        """Host i's IPv4 address."""
        self._check_host(i)
        return f"{_SUBNET}.{i + 1}"

    def addr6(self, i: int) -> str:
        """Host i's IPv6 address (unique local)."""
        self._check_host(i)
        return f"fd77::{i + 1}"

    def netns_path(self, i: int) -> str:
        """Host i's network namespace, for `nsenter --net=PATH` or setns()."""
        self._check_host(i)
        if not self._ns:
            raise RuntimeError("bridge is not running")
        return self._ns[i].path

    def mac(self, i: int) -> str:
        self._check_host(i)
        return f"02:49:4e:43:00:{i + 1:02x}"

    def _check_host(self, i):
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < self.hosts:
            raise ValueError(f"host index must be in 0..{self.hosts - 1}, got {i!r}")

    def _argv(self, i, cmd):
        self._check_host(i)
        if not self._ns:
            raise RuntimeError("bridge is not running")
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return self._ns[i].cmd(argv)

    def run(self, i: int, cmd, *, timeout: float | None = 120, check: bool = True, **kw):
        """Run `cmd` (a shell string or an argv list) inside host i; CompletedProcess."""
        kw.setdefault("capture_output", True)
        kw.setdefault("text", True)
        kw["start_new_session"] = True    # a group of its own, as popen()
        res = subprocess.run(self._argv(i, cmd), timeout=timeout, **kw)
        if check and res.returncode != 0:
            shown = cmd if isinstance(cmd, str) else shlex.join(cmd)
            raise subprocess.CalledProcessError(res.returncode, shown, res.stdout, res.stderr)
        return res

    def popen(self, i: int, cmd, **kw) -> subprocess.Popen:
        """Start `cmd` inside host i (a shell string or an argv list), in a process group
        of its own that dies with the bridge (kill_group() ends it earlier)."""
        kw["start_new_session"] = True
        p = subprocess.Popen(self._argv(i, cmd), **kw)
        try:
            self._reaper.watch_group(p.pid)
        except BaseException:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise
        return p

    def kill_group(self, p: subprocess.Popen, sig=signal.SIGKILL):
        """Signal the whole process group of a command started with popen(); waits for it
        if `sig` is SIGKILL."""
        try:
            os.killpg(p.pid, sig)
        except ProcessLookupError:
            pass
        if sig == signal.SIGKILL:
            p.wait()

    def mac_table_size(self) -> int:
        """Learned MACs (the hosts' own, pinned, are not counted)."""
        with self._lock:
            return len(self._macs)

    def call(self, i: int, fn, *args, **kw):
        """fn(*args, **kw) with host i's network namespace (for creating sockets in it)."""
        self._check_host(i)
        return self._ns[i].call(fn, *args, **kw)

    def inject(self, i: int, frame: bytes):
        """Put `frame` on the wire towards host i, as if another NIC had sent it (tests
        of malformed traffic): it goes through host i's RX engine only."""
        self._check_host(i)
        if self._cs is not None:
            self._cs.inject(i, bytes(frame))
            return
        self._inject.append((i, bytes(frame)))
        os.write(self._stop_w, b"i")

    def snmp(self, i: int) -> dict[str, dict[str, int]]:
        """Host i's kernel counters from /proc/net/snmp, e.g. ["Tcp"]["InCsumErrors"]."""
        lines = self.run(i, ["cat", "/proc/net/snmp"]).stdout.splitlines()
        out = {}
        for head, vals in zip(lines[0::2], lines[1::2]):
            proto, names = head.split(":", 1)
            out[proto] = dict(zip(names.split(), map(int, vals.split(":", 1)[1].split())))
        return out

    # ------------------------------------------------------------------ counters

    def counters(self) -> list[dict]:
        """Per port: frames and bytes from and to the host and on the wire, the spec's TX
        and RX counters, the wire ratio and the float-alignment counters."""
        if self.switch == "compiled":
            out = self._compiled_counters() if self._cs is not None else self._final
            err = self._cs.error if self._cs is not None else self._error
            if err is not None:
                raise BridgeError(f"switch stopped: {err}") from err
            return out
        with self._lock:
            out = [p.counters() for p in self.ports]
        if self._error is not None:
            raise BridgeError(f"switch stopped: {self._error}") from self._error
        return out

    def _compiled_counters(self):
        totals = self._cs.totals()
        out = []
        for i in range(self.hosts):
            d = fp.counters_dict(totals[i])
            d.update(lost=0, rtl_tx_frames=0, rtl_rx_frames=0, golden_checked=self._cs.checked)
            d["wire_ratio"] = d["from_host_bytes"] / d["to_wire_bytes"] if d["to_wire_bytes"] else 1.0
            out.append(d)
        return out

    def report(self) -> str:
        if self.switch == "compiled":
            rows = self._compiled_counters() if self._cs is not None else self._final
        else:
            with self._lock:
                rows = [p.counters() for p in self.ports]
        cols = [("host", None), ("frames in", "from_host_frames"), ("bytes in", "from_host_bytes"),
                ("wire bytes", "to_wire_bytes"), ("frames out", "to_host_frames"),
                ("bytes out", "to_host_bytes"), ("compressed", "tx_compressed"),
                ("fall-back", "tx_fallback"), ("bypassed", "tx_bypassed"),
                ("decompressed", "rx_decompressed"), ("malformed", "rx_malformed"),
                ("wire ratio", "wire_ratio"), ("misaligned", "misaligned"), ("lost", "lost"),
                ("forged", "forged"), ("host errors", "host_errors")]
        lines = ["  ".join(f"{c:>12}" for c, _ in cols)]
        for i, r in enumerate(rows):
            vals = [str(i)] + [f"{r[k]:.2f}x" if k == "wire_ratio" else str(r[k])
                               for _, k in cols[1:]]
            lines.append("  ".join(f"{v:>12}" for v in vals))
        return "\n".join(lines)

    # ------------------------------------------------------------------ the switch

    def timing(self) -> dict[str, float]:
        """Seconds the switch thread spent reading TAPs, in the TX and RX engines, and
        writing TAPs (with pcaps), since start(); after close(), also the switch
        thread's CPU time in all (`switch_cpu`)."""
        with self._lock:
            out = dict(self._time) if self.switch == "python" else {}
        if self._thread is None and self._cs is None:
            out["switch_cpu"] = self._cpu
        return out

    def _switch(self):
        try:
            self._loop()
        except BaseException as e:  # reported by counters() and close()
            self._error = e
        finally:
            self._cpu = time.thread_time()

    def _loop(self):
        n = self.hosts
        rate = self.rate_gbps * 1e9 if self.rate_gbps else None
        egress = [_Egress(rate) for _ in range(n)]
        macs = self._macs
        poller = select.poll()
        fd_port = {fd: i for i, fd in enumerate(self._fds)}
        reading = [True] * n
        for fd in self._fds:
            poller.register(fd, select.POLLIN)
        poller.register(self._stop_r, select.POLLIN)
        wire_pcap, host_pcap = self._pcaps
        while True:
            now = time.monotonic()
            waits = [e.queue[0][0] - now for e in egress if e.queue]
            timeout = None if not waits else max(0.0, min(waits)) * 1000
            events = poller.poll(timeout)
            for fd, ev in events:
                if fd == self._stop_r:
                    if b"x" in os.read(self._stop_r, 64):
                        return
                    continue
                i = fd_port[fd]
                if ev & (select.POLLERR | select.POLLNVAL | select.POLLHUP):
                    # One host's TAP is broken: that port stops reading, no other does.
                    with self._lock:
                        self.ports[i].stats.host_errors += 1
                    poller.modify(fd, 0)
                    reading[i] = None
                    continue
                frames = []
                t0 = time.perf_counter()
                for _ in range(_READ_BATCH):
                    try:
                        frames.append(os.read(fd, 65536))
                    except BlockingIOError:
                        break
                    except OSError:
                        with self._lock:
                            self.ports[i].stats.host_errors += 1
                        break
                self._time["read"] += time.perf_counter() - t0
                if not frames:
                    continue
                if host_pcap is not None:
                    host_pcap.write_many(frames)
                frames = self._admit(i, frames, time.monotonic())
                t0 = time.perf_counter()
                with self._lock:
                    wire = self.ports[i].to_wire(frames)
                self._time["tx"] += time.perf_counter() - t0
                now = time.monotonic()
                for f in wire:
                    if self.drop and self._rng.random() < self.drop:
                        self.ports[i].stats.lost += 1
                        continue
                    egress[i].push(now, f)
                if rate and egress[i].queued_bytes > _QUEUE_LIMIT and reading[i]:
                    # Like a NIC whose TX ring is full: stop taking frames from the host.
                    poller.modify(fd, 0)
                    reading[i] = False
            while self._inject:
                i, f = self._inject.popleft()
                self._deliver([f], [i], wire_pcap, host_pcap)
            now = time.monotonic()
            for i, e in enumerate(egress):
                due = e.due(now)
                # Consecutive frames for the same hosts go through RX as one batch.
                batch, batch_targets = [], None
                for f in due:
                    dst = macs.lookup(f[0:6], now)
                    targets = (dst,) if dst >= 0 and dst != i else \
                              tuple(j for j in range(n) if j != i) if dst == FLOOD else ()
                    if targets != batch_targets and batch:
                        self._deliver(batch, batch_targets, wire_pcap, host_pcap)
                        batch = []
                    batch.append(f)
                    batch_targets = targets
                if batch:
                    self._deliver(batch, batch_targets, wire_pcap, host_pcap)
                if reading[i] is False and e.queued_bytes <= _QUEUE_LIMIT // 2:
                    poller.modify(self._fds[i], select.POLLIN)
                    reading[i] = True

    def _admit(self, i, frames, now):
        """The frames host i sent that the switch takes: no runts, no forged source MAC;
        learns the rest."""
        macs, st = self._macs, self.ports[i].stats
        out = []
        with self._lock:
            macs.expire(now)
            for f in frames:
                if len(f) < 14:
                    st.forged += 1
                    continue
                got = macs.learn(f[6:12], i, now)
                if got == FORGED:
                    st.forged += 1
                    continue
                if got < FORGED:
                    st.mac_table_full += 1
                out.append(f)
        return out

    def _deliver(self, wire_frames, targets, wire_pcap, host_pcap):
        if wire_pcap is not None:
            wire_pcap.write_many(wire_frames)
        for j in targets:
            port = self.ports[j]
            with self._lock:   # counters read by another thread stay consistent
                t0 = time.perf_counter()
                host = port.to_host(wire_frames)
                t1 = time.perf_counter()
                self._time["rx"] += t1 - t0
                for f, bad in host:
                    # A frame the RX engine flags bad (tuser) is dropped here, as a NIC
                    # driver drops a descriptor with its error bit set: the kernel would
                    # catch most by checksum, but not a malformed payload whose values
                    # still decode right (one byte too many). deliver_flagged=True hands
                    # it over as the engine emitted it, for experiments.
                    if bad and not self.deliver_flagged:
                        continue
                    try:
                        os.write(self._fds[j], f)
                    except BlockingIOError:
                        port.stats.host_queue_drops += 1
                        continue
                    except OSError:       # EIO: host j's link is down; only j misses it
                        port.stats.host_errors += 1
                        continue
                    port.stats.to_host_frames += 1
                    port.stats.to_host_bytes += len(f)
                    if host_pcap is not None:
                        host_pcap.write_many([f])
                self._time["write"] += time.perf_counter() - t1
