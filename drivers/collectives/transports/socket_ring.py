"""The paper's aggregator-free exchange (Algorithm 1): reduce-scatter then all-gather
around a ring of P ranks, in P blocks, over TCP.

Block b (P contiguous blocks of a buffer of any length; P need not divide it) starts at
rank b, and each rank in turn adds its own contribution: rank b+1 computes
g_b + g_{b+1}, rank b+2 adds g_{b+2}, ..., so every block is summed in float32 in one
fixed order by one rank, its owner (b - 1 mod P), which then sends the result around
the ring. Every rank ends with the owner's bytes, bit for bit.

With compression (the NIC on a tagged socket, or `emulate=True` applying the golden
roundtrip in software) every hop carries the lossy roundtrip of what was sent: the
partial sums on the way round, and the final block in the all-gather, where the owner
also keeps the roundtrip of what it sent (the roundtrip is idempotent, so forwarding a
received block changes nothing and all ranks agree).

Four wires (`wire=`): "plain" float32; "nic": float32 on tagged sockets, the NIC
compresses; "emulate": float32 on plain sockets, the receiver applies the codec's
roundtrip (no byte saved: for checking); "software": every hop sends the codec's group
bytes (what the NIC would put on the wire) on plain sockets and the receiver decodes
them, so the bytes are saved without a NIC. All three lossy wires give the same numbers,
bit for bit. In the all-gather a rank forwards a block as a NIC would code what its
host sends, the values it decoded: with the paper's codec it re-codes them (the values
come out the same, the roundtrip being idempotent, and the bytes can be fewer: it spends
a byte on an 8-bit-band value that decodes to 0, and none on the 0 it forwards); with
the bounded codec, scaled or not, re-coding gives the received bytes again, so it sends
those (one encode fewer per forwarded chunk).

The schedule (which chunk is sent and received at each step, what is added, what the
owner keeps) is ring_schedule.py's `ring_plan`, played by its `run_ring`, the schedule
the simulation's program plays; this module supplies the hops on the float32 wires
(`_FloatHops`); the software wire plays the same steps (ring_steps) as a chain of tasks
(socket_coded.py).

Pipelining: a block moves in chunks; one sender thread per rank sends chunks in the
order the neighbour receives them, while the main thread receives, sums and hands each
summed chunk on, so receive, sum and send overlap. On the software wire the calling
thread reads frames ahead and a pool of codec threads (golden.fast's loops release the
GIL) decodes and re-codes several chunks at once, each in one task, the sender sending
them in order on the wire.
"""

from __future__ import annotations

import os

import numpy as np

from .... import golden
from ..ring_schedule import ring_plan, run_ring
from ... import sockets
from .agreement import agree_via_store
from ..codecs import SCALE_MAX, SCALE_MIN, ScaledCodec, decode_into, make_codec
from ..memory import LossRecorder
from .sender import LinkSender
from .socket_coded import exchange_coded
from .links import (DEFAULT_TIMEOUT, Collective, CollectiveError, as_float32_buffer,
                        rendezvous)

__all__ = ["Ring", "DEFAULT_CHUNK", "WIRES", "default_codec_threads"]

WIRES = ("plain", "nic", "emulate", "software")


def default_codec_threads() -> int:
    """Codec threads of the software wire: the cores this process may run on (its CPU
    affinity: a rank pinned to 2 of 64 cores codes on 2), at most 4 (past that the wire,
    not the codec, sets the pace on a 10 Gb/s link; measured in bench_collectives)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:          # no affinity on this platform (macOS)
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))

DEFAULT_CHUNK = 1 << 18          # floats per pipelined chunk (1 MiB)
PIECE = 1 << 16                  # floats per coded frame (and per scale): see _piece


def _piece(chunk: int) -> int:
    """Floats per coded piece of a chunk: each piece is one frame on the software wire
    and one scale of the ScaledCodec on every lossy wire. PIECE where the chunk is a
    multiple of it (so the numbers and bytes do not depend on the chunk: a chunk of 2^18
    codes as four of 2^16), else the chunk itself. Why two sizes: the scale follows the
    values best on small pieces, while each chunk costs a pool task, a hand-off to the
    sender and one to the receiver (at 2^16, about a fifth of the ring's CPU time at
    P = 2 on 12M values: docs/benchmarks.md)."""
    return PIECE if chunk % PIECE == 0 else chunk


class Ring(Collective):
    """A ring of `world` ranks; `allreduce(x)` sums float32 buffers in place.

    Build it with `Ring.from_store(store, rank, world, ...)` (a torch.distributed Store:
    TCPStore, FileStore, or the default process group's) or from explicit links.
    wire: see the module's docstring ("plain" by default; compress=True is wire="nic",
    emulate=True is wire="emulate"). codec ("bounded", golden's default and the NIC's
    wire format version 2, or "paper") and k (error bound 2^-k) apply to the lossy
    wires; on wire "nic" the codec must be the NIC's. chunk is in floats.
    """

    def __init__(self, rank, world, links, *, k=golden.K_DEFAULT, codec=golden.CODEC_DEFAULT,
                 wire=None,
                 compress=False, emulate=False, chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT,
                 codec_threads=None):
        self.wire = _wire(wire, compress, emulate)
        if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
            raise ValueError(f"chunk must be a positive number of floats, got {chunk!r}")
        self.rank, self.world, self.k = rank, world, golden.check_k(k)
        self.codec = make_codec(codec, self.k)
        self.compress, self.emulate = self.wire == "nic", self.wire == "emulate"
        # A LossRecorder (error feedback) and a ScaledCodec (the scale-following bound)
        # change what the float32 wires do around the NIC's fixed-k codec.
        self._recorder = self.codec if isinstance(self.codec, LossRecorder) else None
        base = self._recorder.inner if self._recorder is not None else self.codec
        self._scaled = base if isinstance(base, ScaledCodec) else None
        # A codec that codes a chunk's frames in one call (ScaledCodec.encode_frames):
        # the software wire uses it, through the recorder where there is one.
        self._frames = (self._recorder or self.codec) if hasattr(base, "encode_frames") \
            else None
        self.chunk, self.timeout = chunk, timeout
        self.piece = _piece(chunk)
        self.codec_threads = codec_threads or default_codec_threads()
        self.next = links.get((rank + 1) % world) if world > 1 else None
        self.prev = links.get((rank - 1) % world) if world > 1 else None
        self._links = links
        self._calls = 0
        self._pool = None
        self.bytes_sent = 0          # bytes this rank sent on its data connection
        self.payload_bytes = 0       # of which values (coded), without the frame headers
        self._broken = False

    @classmethod
    def from_store(cls, store, rank: int, world: int, *, host: str = "127.0.0.1",
                   prefix: str = "inceptionn/ring", k=golden.K_DEFAULT,
                   codec=golden.CODEC_DEFAULT, wire=None, compress=False, emulate=False, mss=sockets.GRADIENT_MSS,
                   dscp=sockets.DSCP_DEFAULT, chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT,
                   codec_threads=None, settings: dict | None = None):
        """Set up from a rendezvous store. Every rank's settings (wire, codec, bound,
        chunk, plus the caller's `settings`) are compared first: any difference is a
        SettingsMismatch on every rank."""
        if world < 1 or not 0 <= rank < world:
            raise ValueError(f"rank {rank} of world {world} is not a valid position")
        wire = _wire(wire, compress, emulate)
        name = codec if isinstance(codec, str) else make_codec(codec, k).name
        mine = dict(settings or {}, collective="ring", **_settings(wire, name, k, chunk))
        agree_via_store(store, prefix, rank, world, mine, timeout)
        peers = sorted({(rank + 1) % world, (rank - 1) % world} - {rank})
        links = rendezvous(store, rank, world, peers, host=host, prefix=prefix,
                           compress=wire == "nic", mss=mss, dscp=dscp, timeout=timeout)
        return cls(rank, world, links, k=k, codec=codec, wire=wire, chunk=chunk,
                   timeout=timeout, codec_threads=codec_threads)

    def settings(self) -> dict:
        return dict(collective="ring", **_settings(self.wire, self.codec.name, self.k,
                                                   self.chunk))

    # ------------------------------------------------------------------ checks

    def _agree(self, n):
        """Every rank learns every rank's length (P - 1 steps round the control ring),
        so a mismatch is the same clear error everywhere."""
        seen = {self.rank: n}
        msg = [self.rank, n]
        for _ in range(self.world - 1):
            self.next.send_msg(msg)
            msg = self.prev.recv_msg()
            seen[msg[0]] = msg[1]
        if len(set(seen.values())) > 1:
            raise ValueError(f"allreduce call {self._calls}: buffer lengths differ between "
                             f"ranks: {dict(sorted(seen.items()))}")

    # ------------------------------------------------------------------ the exchange

    def allreduce(self, x, divide_by: int = 1) -> np.ndarray:
        """Sum `x` (1-D float32, contiguous) over all ranks, in place; returns x.
        divide_by: x ends as the sum divided by it, in float32 (the mean, for
        divide_by=world: the DDP hook's), the same bits as dividing afterwards; on the
        software wire the final values are written divided where nothing reads them
        again (P = 2, or a codec whose forwards send the frames received), which saves a
        pass over x."""
        x = as_float32_buffer(x, "allreduce buffer")
        if isinstance(divide_by, bool) or not isinstance(divide_by, int) or divide_by < 1:
            raise ValueError(f"divide_by must be a positive int, got {divide_by!r}")
        if self._broken:
            raise CollectiveError("the ring is broken by an earlier failure; build a new one")
        self._calls += 1
        if self.world == 1:
            return _divide(x, divide_by)
        try:
            self._agree(x.size)
            if self.wire == "software":
                divide_by = self._exchange_coded(x, divide_by)
            else:
                self._exchange(x)
        except BaseException:
            self._broken = True
            self.close()
            raise
        return _divide(x, divide_by)

    def close(self):
        super().close()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    def _rt(self, a):
        if a.size == 0:
            return a
        return self.codec.roundtrip(a)

    def _exchange(self, x):
        """Algorithm 1's schedule (ring_schedule.ring_plan, played by run_ring) with
        float32 on the wire."""
        scaled = self._scaled is not None and self.wire != "plain"
        sender = (_ScaleSender if scaled else LinkSender)(self.next, self._wake)
        # Scaled, a chunk is a piece: one scale per piece, as on the software wire.
        chunk = self.piece if scaled else self.chunk
        try:
            run_ring(x, ring_plan(x.size, self.world, self.rank, chunk),
                     _FloatHops(self, sender))
        finally:
            sender.finish()

    def _send(self, sender, view, s=None):
        if view.size:
            sender.put(view if s is None else (s, view))
            self.bytes_sent += view.nbytes
            self.payload_bytes += view.nbytes

    def _recv_scale(self, sender) -> int:
        """The scale of the next chunk, from the previous rank's control connection."""
        if sender.error is not None:
            raise sender.error
        s = self.prev.recv_msg()
        if isinstance(s, bool) or not isinstance(s, int) or not SCALE_MIN <= s <= SCALE_MAX:
            raise CollectiveError(f"rank {self.prev.peer} sent {s!r} as a chunk's scale, not "
                                  f"an integer in [{SCALE_MIN}, {SCALE_MAX}]")
        return s

    def _recv(self, out, sender):
        if sender.error is not None:
            raise sender.error
        if out.size:
            self.prev.recv_floats_into(out)

    def _wake(self):
        # The sender failed: unblock the main thread's receive (of a chunk or its scale).
        for sock in (self.prev.data, self.prev.ctrl):
            try:
                sock.shutdown(2)
            except OSError:
                pass

    # ------------------------------------------------------------------ software wire

    def _exchange_coded(self, x, divide_by=1) -> int:
        """The same schedule, each hop carrying the codec's bytes (socket_coded.py).
        Returns what x is still to be divided by (1 where the final values were written
        divided)."""
        return exchange_coded(self, x, divide_by)

    def _encode_keep(self, view, divide_by=1):
        if self._recorder is not None:
            return self._recorder.encode_keep(view, divide_by)
        fused = getattr(self.codec, "encode_recorded", None)
        body = fused(view, None, True, divide_by) if fused is not None else None
        if body is not None:
            return body
        body = self.codec.encode(view)
        decode_into(self.codec, body, view, divide_by=divide_by)
        return body


def _divide(x, divide_by):
    if divide_by != 1:
        np.divide(x, np.float32(divide_by), out=x)
    return x


def _wire(wire, compress, emulate):
    if compress and emulate:
        raise ValueError("compress (the NIC) and emulate (software) exclude each other")
    if wire is None:
        return "nic" if compress else "emulate" if emulate else "plain"
    if wire not in WIRES:
        raise ValueError(f"wire must be one of {WIRES}, got {wire!r}")
    if (compress and wire != "nic") or (emulate and wire != "emulate"):
        raise ValueError(f"wire={wire!r} contradicts compress={compress}, emulate={emulate}")
    return wire


def _settings(wire, codec, k, chunk):
    lossy = wire != "plain"
    return {"wire": wire, "codec": codec if lossy else None,
            "error_bound_log2": -int(k) if lossy else None, "chunk_floats": int(chunk)}


class _FloatHops:
    """run_ring's hops on the float32 wires: the sender thread sends views of x while
    this thread receives; "emulate" applies the roundtrip on receipt, and on the lossy
    wires the owner keeps the roundtrip of what it sends.

    With a ScaledCodec each chunk goes out as float32 times 2^-s (a copy), s on the
    control connection beside it; the NIC (or the emulation) codes it at its fixed k and
    the receiver multiplies by 2^s: the software wire's numbers, bit for bit. With a
    LossRecorder recording, the sender adds what the receiver will not get (values minus
    the golden roundtrip: what the receiving end delivers, the engines being bit-exact
    with the golden model) to the loss, as the software wire's encode does."""

    def __init__(self, ring, sender):
        self.ring, self.sender = ring, sender
        self.lossy = ring.wire != "plain"
        self.scaled = ring._scaled if self.lossy else None
        rec = ring._recorder if self.lossy else None
        self.rec = rec if rec is not None and rec.recording else None
        # The roundtrip of what crosses the wire: at the fixed k, scaled or not.
        self.rt = self.scaled.inner.roundtrip if self.scaled is not None else ring._rt
        self.buf = np.empty(0, np.float32)
        self.gathering = False          # past the reduce-scatter: sends are forwards

    def send(self, view, keep):
        if not view.size:
            return
        s, out = self.scaled.scale_down(view) if self.scaled is not None else (None, view)
        # A forwarded final block re-codes unchanged: nothing to record.
        if keep or (self.rec is not None and not self.gathering):
            if self.lossy:
                rt = self.rt(out)
                back = rt if s is None else self.scaled.scale_up(rt, s)
                if self.rec is not None:
                    self.rec.record(view, back)
                if keep:      # what the receivers will decode; the NIC re-codes it unchanged
                    view[:] = back
                    out = view if s is None else rt
        self.ring._send(self.sender, out, s)

    def recv(self, view, add):
        ring = self.ring
        if not view.size:
            return
        s = ring._recv_scale(self.sender) if self.scaled is not None else None
        if not add:                      # the final block: straight into x
            self.gathering = True
            ring._recv(view, self.sender)
            if ring.emulate:
                view[:] = self.rt(view)
            if s is not None:
                view[:] = self.scaled.scale_up(view, s)
            return
        if self.buf.size < view.size:
            self.buf = np.empty(view.size, np.float32)
        got = self.buf[:view.size]
        ring._recv(got, self.sender)
        if ring.emulate:
            got = self.rt(got)
        if s is not None:
            got = self.scaled.scale_up(got, s)
        np.add(got, view, out=view)     # the partial sum so far, plus this rank's own


class _ScaleSender(LinkSender):
    """Sends (s, chunk) pairs in order: s on the control connection, then the chunk."""

    def _send(self, item):
        s, view = item
        self.link.send_msg(s)
        self.link.send_floats(view)
