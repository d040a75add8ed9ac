"""The bridge's compiled switch: one worker thread per host port, each running
drivers/fastpath.pump (nogil) on the frames its host sends, so the ports run on as many
cores as there are, and Python runs only between batches: for the slow path (broadcasts,
learned MACs), the sampled golden check, and to count.

A frame goes through pump when its source MAC is its host's and its destination MAC is
another host's (every frame of a tagged stream); anything else stops the batch at that
frame and goes through `_slow` here, with the same compiled TX and RX and the MAC table
of drivers/mac_table.py, so order is kept. Used by drivers/bridge.Bridge when neither a
lossy wire nor the RTL engine asks for its Python loop. With `vnet` (TAPs with
offloads, drivers/tso.py) a read is a TCP segment of up to 64 KB that pump cuts into
MTU frames, and the frames a host receives are coalesced into fewer writes; the rate
limit, the counters and the checks still see MTU frames.

A rate limit (`rate_bps`) is a token bucket per port on the bytes the port puts on the
wire (plus 24 bytes of preamble, FCS and gap per frame), kept by the port's worker: after
each batch the port's next free time moves on by the batch's wire time, and the port is
not read again until then; the frames wait in the host's TAP queue, where TCP sees a
full link. The bucket holds `_PACE_DEPTH` of credit, so that poll's millisecond
timeouts do not lower the rate, and a batch is as many frames as fit in that depth (at
least one), counted at the port's average wire bytes per frame so far (compressed
frames are several times smaller than the host's): a port never runs ahead of its rate
by much more than the depth, and at 0.05 Gb/s a worker wakes once per several
compressed frames, not once per frame.

The link into each host has the same rate (a full-duplex link has it in both
directions; a switch's output port is where many-to-one traffic, such as every worker
sending to one aggregator, queues): each port's downlink keeps its own next free time,
shared by the workers, and a batch's wire bytes are charged to the downlinks it went to
(split by the host bytes each received). The sending port then waits until the latest
of them is free as well as its own uplink, so P ports sending to one host share that
host's rate, as they would behind a switch's output queue, without dropping frames.
"""

from __future__ import annotations

import os
import select
import threading
import time

import numpy as np

from .. import golden
from . import fastpath as fp
from .mac_table import FLOOD, FORGED

__all__ = ["CompiledSwitch", "GoldenMismatch", "warm_up"]

_BATCH = 64        # frames per pump() call: Python gets a look-in between batches
_PACE_DEPTH = 0.005   # seconds of wire time a rate-limited port may run ahead (see above)


class GoldenMismatch(RuntimeError):
    """The compiled path gave other bytes than golden.tx_frame / rx_frame (sampled check)."""


def warm_up():
    """Compile (or load from numba's cache) the switch's kernels now, without a bridge:
    a first bridge in a fresh checkout otherwise spends about 30 CPU-s compiling them
    (the demo does this beside its engine builds; make test before its workers)."""
    from .mac_table import MacTable
    CompiledSwitch(fds=[-1, -1], macs=["02:00:00:00:00:01", "02:00:00:00:00:02"],
                   macs_table=MacTable({}), lock=threading.Lock(), k=10, codec="bounded",
                   dscp=golden.DSCP_DEFAULT, enable=True, deliver_flagged=False, check_every=0,
                   stop_fd=-1)


class CompiledSwitch:
    def __init__(self, *, fds, macs, macs_table, lock, k, codec, dscp, enable, deliver_flagged,
                 check_every, stop_fd, pcaps=(None, None), workers=None, version=None,
                 versions=golden.RX_VERSIONS_DEFAULT, rate_bps=None, frame_bytes=9014,
                 vnet=False):
        n = len(fds)
        # Worker threads: one per port by default; fewer (each polling several ports)
        # where cores are few, so a frame does not wait for a thread to be scheduled.
        self.workers = n if workers is None else workers
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) \
                or not 1 <= self.workers <= n:
            raise ValueError(f"workers must be an integer in 1..{n}, got {workers!r}")
        self.n, self.fds, self.k, self.codec, self.dscp = n, list(fds), k, codec, dscp
        self.enable, self.deliver_flagged = bool(enable), bool(deliver_flagged)
        self.check_every = int(check_every or 0)
        lo, hi = golden.k_range(codec)
        self.tx_enable = self.enable and lo <= k <= hi      # golden bypasses a k out of range
        self.version = golden.payload.check_version(
            golden.CODEC_VERSION[codec] if version is None else version, codec)
        self.versions = golden.check_versions(versions)
        self.vmask = golden.versions_mask(self.versions)
        self.lut = fp.encode_lut(k, codec)
        self.tabs = fp.tables()
        self.macs = np.array([int(m.replace(":", ""), 16) for m in macs], np.uint64)
        self.macs_table, self.lock, self.stop_fd = macs_table, lock, stop_fd
        # Captures (wire, host): each frame is handed to Python to be written, in order.
        self.wire_pcap, self.host_pcap = pcaps
        self.capture = self.wire_pcap is not None or self.host_pcap is not None
        self._pcap_lock = threading.Lock()
        self.fds_arr = np.array(self.fds, np.int32)
        if rate_bps is not None and not rate_bps > 0:
            raise ValueError(f"rate_bps must be None or > 0, got {rate_bps!r}")
        self.rate_bps = rate_bps
        self.batch = 1 if self.capture else _BATCH
        self.frame_bytes = frame_bytes
        self.down_free = [0.0] * n          # rate limit: each downlink's next free time
        self._down_lock = threading.Lock()
        if rate_bps is not None:
            self.batch = self._fit(frame_bytes + 24)
        w = self.workers
        self.cnt = [np.zeros((n, len(fp.COLUMNS)), np.int64) for _ in range(w + 1)]  # + control
        self.flows = [fp.FlowTable() for _ in range(n)]
        # vnet: the TAPs carry virtio-net headers and hand over GSO segments (drivers/tso.py)
        self.vnet = bool(vnet)
        if self.vnet and self.capture:
            raise ValueError("captures take frames one at a time: open the TAPs without offloads")
        self.bufs = [fp.Buffers(self.vnet) for _ in range(w + 1)]
        for b in self.bufs:
            b.state[3] = self.check_every
        self.checked = 0
        self.cpu = 0.0
        self.error: BaseException | None = None
        self._threads: list[threading.Thread] = []
        self._warm_up()

    def _warm_up(self):
        """Compile (or load from numba's cache) pump and the kernels now."""
        r, w = os.pipe()
        try:
            os.set_blocking(r, False)
            b, fl = self.bufs[-1], self.flows[0]
            scratch = np.zeros_like(self.cnt[-1])
            fp.pump(r, 0, self.fds_arr, self.macs, 1, self.k, self.version, self.lut, self.dscp,
                    self.tx_enable, self.enable, self.deliver_flagged, 0, self.tabs, fl.keys,
                    fl.isn, fl.state, scratch, b.inbuf, b.wire, b.hostraw, b.dec,
                    b.state, self.vmask, b.raw, b.vh, b.agg, b.ag)
            # The slow path calls the kernels from Python: load them now too.
            n = 60
            b.inbuf[:n] = 0
            fp.observe(b.inbuf, n, self.dscp if self.tx_enable else -1, fl.keys, fl.isn,
                       fl.state, scratch, 0)
            m = fp.tx_into(b.inbuf, n, b.wire, self.k, self.version, self.lut, self.dscp,
                           self.tx_enable, scratch, 0, b.dec)
            fp.rx_into(b.wire, m, b.host, self.dscp, self.enable, scratch, 0, self.tabs, self.vmask)
        finally:
            os.close(r)
            os.close(w)

    def start(self):
        for w in range(self.workers):
            t = threading.Thread(target=self._worker, args=(w,), name=f"inceptionn-worker{w}",
                                 daemon=True)
            self._threads.append(t)
            t.start()

    def join(self):
        for t in self._threads:
            t.join()
        self._threads = []

    def totals(self) -> np.ndarray:
        return sum(self.cnt)

    # ------------------------------------------------------------------ workers

    def _worker(self, i):
        cpu0 = time.thread_time()
        try:
            self._run(i)
        except BaseException as e:  # reported by Bridge.counters() and close()
            self.error = e
        finally:
            with self.lock:
                self.cpu += time.thread_time() - cpu0

    def _run(self, w):
        """Worker w: the ports w, w + workers, w + 2 workers, ..."""
        b, cnt = self.bufs[w], self.cnt[w]
        poller = select.poll()
        port_of = {}
        args = {}
        for i in range(w, self.n, self.workers):
            fl = self.flows[i]
            port_of[self.fds[i]] = i
            poller.register(self.fds[i], select.POLLIN)
            args[i] = (self.fds_arr, self.macs, self.batch, self.k,
                       self.version, self.lut, self.dscp, self.tx_enable, self.enable,
                       self.deliver_flagged, self.check_every, self.tabs, fl.keys, fl.isn,
                       fl.state, cnt, b.inbuf, b.wire, b.hostraw, b.dec, b.state, self.vmask,
                       b.raw, b.vh, b.agg, b.ag)
        poller.register(self.stop_fd, select.POLLIN)
        free_at = dict.fromkeys(port_of.values(), 0.0)   # rate limit: the port's next free time
        per_frame = dict.fromkeys(port_of.values(), self.frame_bytes + 24.0)  # wire bytes, average
        paused: dict[int, int] = {}                          # fd -> port, waiting for free_at
        while True:
            timeout = None
            if paused:
                timeout = max(0.0, min(free_at[i] for i in paused.values()) - time.monotonic()) * 1e3
            events = poller.poll(timeout)
            if paused:
                now = time.monotonic()
                for efd, i in list(paused.items()):
                    if free_at[i] <= now:
                        poller.modify(efd, select.POLLIN)
                        del paused[efd]
            for efd, ev in events:
                if efd == self.stop_fd:
                    return
                i = port_of[efd]
                if efd in paused:
                    continue
                if ev & (select.POLLERR | select.POLLNVAL | select.POLLHUP):
                    cnt[i, fp.HOST_ERRORS] += 1     # this host's TAP is broken: only its port stops
                    poller.unregister(efd)
                    continue
                if self.rate_bps is None:
                    self._drain(efd, i, args[i], b, cnt)
                    continue
                frames0 = cnt[i, fp.TO_WIRE_FRAMES]
                before = cnt[i, fp.TO_WIRE_BYTES] + 24 * frames0
                host0 = cnt[:, fp.TO_HOST_BYTES].copy()
                self._drain(efd, i, args[i], b, cnt, once=True)
                sent = cnt[i, fp.TO_WIRE_BYTES] + 24 * cnt[i, fp.TO_WIRE_FRAMES] - before
                frames = cnt[i, fp.TO_WIRE_FRAMES] - frames0
                if frames:
                    per_frame[i] = 0.75 * per_frame[i] + 0.25 * sent / frames
                    args[i] = args[i][:2] + (self._fit(per_frame[i]),) + args[i][3:]
                now = time.monotonic()
                free_at[i] = max(free_at[i], now - _PACE_DEPTH) + sent * 8 / self.rate_bps
                free_at[i] = max(free_at[i], self._downlinks(cnt[:, fp.TO_HOST_BYTES] - host0,
                                                             sent, now))
                if free_at[i] > now:
                    poller.modify(efd, 0)
                    paused[efd] = i

    def _downlinks(self, got, sent, now):
        """Charge a batch's `sent` wire bytes to the downlinks that received host bytes
        (`got`, per port), in proportion; the latest next free time among them."""
        total = int(got.sum())
        if total <= 0:
            return 0.0
        latest = 0.0
        with self._down_lock:
            for j in np.flatnonzero(got):
                share = sent * int(got[j]) / total
                self.down_free[j] = max(self.down_free[j], now - _PACE_DEPTH) \
                    + share * 8 / self.rate_bps
                latest = max(latest, self.down_free[j])
        return latest

    def _fit(self, wire_per_frame):
        """Frames of a paced batch: what fits in the bucket's depth, 1.._BATCH."""
        cap = 1 if self.capture else _BATCH
        return max(1, min(cap, int(_PACE_DEPTH * self.rate_bps / 8 / wire_per_frame)))

    def _drain(self, fd, i, args, b, cnt, once=False):
        """pump() until the TAP is empty (once: one batch, for the rate limit). Never
        returns with a GSO segment half cut (b.state[5]): no poll would wake for it."""
        while True:
            code, done = fp.pump(fd, i, *args)
            if self.capture and done and code != fp.SLOW:
                self._capture(b)
            if code == fp.SLOW:
                self._slow(i, bytes(b.inbuf[:b.state[0]]), b, self.flows[i], cnt)
            elif code == fp.SAMPLE:
                self._check(i, b)
            else:
                return
            if once and not b.state[5]:
                return

    def _capture(self, b):
        st = b.state
        with self._pcap_lock:
            if self.host_pcap is not None:
                self.host_pcap.write(b.inbuf[:st[0]].tobytes())
            if self.wire_pcap is not None and st[1] >= 0:
                self.wire_pcap.write(b.wire[:st[1]].tobytes())
            if self.host_pcap is not None and st[4]:
                self.host_pcap.write(b.host[:st[2]].tobytes())

    def _write_pcap(self, pcap, data):
        if pcap is not None:
            with self._pcap_lock:
                pcap.write(bytes(data))

    def _slow(self, i, frame, b, fl, cnt):
        """A frame pump left to Python: learn its source, flood or forward it."""
        self._write_pcap(self.host_pcap, frame)
        now = time.monotonic()
        with self.lock:
            self.macs_table.expire(now)
            got = self.macs_table.learn(frame[6:12], i, now)
            dst = self.macs_table.lookup(frame[0:6], now)
        if got == FORGED:
            cnt[i, fp.FORGED] += 1
            return
        if got < FORGED:
            cnt[i, fp.MAC_TABLE_FULL] += 1
        cnt[i, fp.FROM_HOST_FRAMES] += 1
        cnt[i, fp.FROM_HOST_BYTES] += len(frame)
        n = len(frame)
        fp.observe(b.inbuf, n, self.dscp if self.tx_enable else -1, fl.keys, fl.isn, fl.state, cnt, i)
        targets = [j for j in range(self.n) if j != i] if dst == FLOOD else \
            [dst] if dst != i else []
        if not targets:
            cnt[i, fp.TO_SELF] += 1
            return
        w = fp.tx_into(b.inbuf, n, b.wire, self.k, self.version, self.lut, self.dscp,
                       self.tx_enable, cnt, i, b.dec)
        if w < 0:
            return
        cnt[i, fp.TO_WIRE_FRAMES] += 1
        cnt[i, fp.TO_WIRE_BYTES] += w
        self._write_pcap(self.wire_pcap, b.wire[:w])
        for j in targets:
            self._deliver(j, b.wire, w, b, cnt)

    def _deliver(self, j, wire, w, b, cnt):
        h, bad = fp.rx_into(wire, w, b.host, self.dscp, self.enable, cnt, j, self.tabs, self.vmask)
        if bad:
            cnt[j, fp.FLAGGED] += 1
            if not self.deliver_flagged:
                return
        try:
            b.hostraw[:b.vh] = 0        # no offload flags: the host's kernel checks the sums
            os.write(self.fds[j], b.hostraw[:b.vh + h])
        except BlockingIOError:
            cnt[j, fp.HOST_QUEUE_DROPS] += 1
        except OSError:              # EIO: host j's link is down; only j misses it
            cnt[j, fp.HOST_ERRORS] += 1
        else:
            cnt[j, fp.HOST_WRITES] += 1
            cnt[j, fp.TO_HOST_FRAMES] += 1
            cnt[j, fp.TO_HOST_BYTES] += h
            self._write_pcap(self.host_pcap, b.host[:h])

    def inject(self, i, frame):
        """A wire frame towards host i (through its RX only), from a control thread."""
        with self.lock:
            b, cnt = self.bufs[-1], self.cnt[-1]
            b.wire[:len(frame)] = np.frombuffer(frame, np.uint8)
            self._deliver(i, b.wire, len(frame), b, cnt)

    def _check(self, i, b):
        """The frame pump just forwarded, against the NumPy model (readable reference)."""
        frame = bytes(b.inbuf[:b.state[0]])
        wire = bytes(b.wire[:b.state[1]])
        host = bytes(b.host[:b.state[2]])
        want = golden.tx_frame(frame, k=self.k, dscp=self.dscp, enable=self.enable,
                               codec=self.codec, version=self.version)
        if want != wire:
            raise GoldenMismatch(f"port {i}: compiled TX differs from golden.tx_frame on a "
                                 f"{len(frame)}-byte frame")
        want_host, _ = golden.rx_frame(want, dscp=self.dscp, enable=self.enable,
                                       versions=self.versions)
        if want_host != host:
            raise GoldenMismatch(f"port {i}: compiled RX differs from golden.rx_frame on a "
                                 f"{len(wire)}-byte frame")
        with self.lock:
            self.checked += 1
