"""The socket ring's software wire: every hop carries the codec's frames (what the NIC
would put on the wire), played as a chain of tasks so that a chunk changes threads
as few times as it can.

Algorithm 1's steps on one rank (ring_schedule.ring_steps) are: send this rank's own
chunks; then for each chunk received, add it to (reduce-scatter) or store it in
(all-gather) its place in x and, at every step but the last, send that place on. So
whatever is sent after the first sends is a place just received, and the rank's
sends come in the order of its receives. The thread that calls allreduce reads the
previous rank's frames itself, in the plan's order, and for each chunk starts one task
in the codec pool that decodes it into its place and, where the place is sent on,
codes it again (the owner's keep, the recorded encode of the reduce-scatter, a
re-coded forward); the task's future goes straight into the sender thread's queue,
which sends the chunks in order. A forward whose codec re-codes to the same bytes (the
bounded codec, scaled or not) sends the frames received as they came, before their
decode is done. Each chunk changes threads twice (reader to pool, pool to sender),
where playing the steps one by one on the calling thread took it through the reader,
the pool, the calling thread, the pool again and the sender (docs/benchmarks.md: the
futex calls).

A place is written only by its own task: a rank sends a chunk's place before the frames
that fill it again can come back round the ring, and its sender sends it only once its
task has coded it. At most `depth` chunks are read ahead of their tasks.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import threading
from typing import NamedTuple

import numpy as np

from ..codecs import decode_into
from ..ring_schedule import ring_plan, ring_steps
from .links import CollectiveError
from .sender import LinkSender

__all__ = ["exchange_coded", "verbatim"]


def verbatim(ring) -> bool:
    """Whether a forward sends the frames received: re-coding decoded values gives their
    bytes again (the bounded codec, scaled or not: its decoded values keep their band,
    field and octave; the paper's codec may code fewer bytes, so it re-codes)."""
    rec = ring._recorder
    return getattr(rec.inner if rec is not None else ring.codec, "recodes_to_same_bytes", False)


class _Place(NamedTuple):
    """A received chunk: where it lands (view of x), added there or stored divided by
    `div`, and what follows: sent on (`send`), as the owner's kept block (`keep`)."""
    view: np.ndarray
    add: bool
    div: int
    send: bool
    keep: bool


def _places(steps, div):
    """ring_steps as (the first sends' views, the received places in order)."""
    firsts: list[np.ndarray] = []
    places: list[_Place] = []
    for op, view, flag in steps:
        if op == "recv":
            places.append(_Place(view, flag, 1 if flag else div, False, False))
        elif places:         # a send after a receive sends that receive's place on
            last = places[-1]
            if last.send or last.view.__array_interface__ != view.__array_interface__:
                raise RuntimeError("the ring's plan sends what it did not just receive")
            places[-1] = last._replace(send=True, keep=flag)
        else:
            firsts.append(view)
    return firsts, places


def exchange_coded(ring, x, divide_by=1) -> int:
    """Algorithm 1 on x with the codec's frames on every hop; returns what x is still to
    be divided by (1 where the final values were written divided)."""
    if ring._pool is None:
        ring._pool = cf.ThreadPoolExecutor(ring.codec_threads, thread_name_prefix="ring-codec")
    # The final values (the owner's kept block, the all-gather's stores) written as the
    # mean where x is not read again: no forward re-codes them.
    div = divide_by if ring.world == 2 or verbatim(ring) else 1
    firsts, places = _places(ring_steps(x, ring_plan(x.size, ring.world, ring.rank,
                                                     ring.chunk)), div)
    _Exchange(ring, div).run(firsts, places)
    return divide_by // div


class _Exchange:
    """One allreduce on the software wire: this thread reads, the pool codes, the
    sender sends."""

    def __init__(self, ring, div):
        self.ring, self.div = ring, div
        self.pool, self.piece, self.link = ring._pool, ring.piece, ring.prev
        self.verbatim = verbatim(ring)
        self.depth = threading.Semaphore(2 * ring.codec_threads + 2)
        self.woken = False              # a thread failed and shut the data connections
        # What codes a place sent on, by what it is: this rank's own first chunks and the
        # reduce-scatter's sums, the owner's keep, an all-gather forward (None where the
        # frames received are sent as they came).
        self.code_sum = self._encoder(keep=False, forward=False)
        self.code_keep = self._encoder(keep=True, forward=False)
        self.code_forward = None if self.verbatim else self._encoder(keep=False, forward=True)

    def run(self, firsts, places):
        sender = _FrameSender(self.ring, self._wake)
        pending: list[cf.Future] = []   # tasks whose result nobody sends (the last stores)
        try:
            for view in firsts:
                sender.put(self.pool.submit(self.code_sum, view))
            for place in places:
                self._take(place, sender, pending)
            for fut in pending:
                fut.result()
        except BaseException as e:
            if not self.woken:          # this thread failed first: unblock the sender
                self._wake()
            err = sender.finish()
            if isinstance(e, _SelfWoken):   # the sender failed first: its error
                raise (err or CollectiveError("the ring's sender failed")) from None
            raise
        err = sender.finish()
        if err is not None:
            raise err

    def _take(self, place, sender, pending):
        """Read the next chunk's frames and start its task (and send a verbatim forward)."""
        if not self.depth.acquire(timeout=self.ring.timeout):
            raise CollectiveError("the codec threads did not finish a chunk in time")
        try:
            frames = self._read(place.view)
        except BaseException:
            self.depth.release()
            raise
        code = None if not place.send else self.code_keep if place.keep \
            else self.code_sum if place.add else self.code_forward
        fut = self.pool.submit(_land, self.ring, frames, place, code)
        fut.add_done_callback(lambda _: self.depth.release())
        if code is not None:
            sender.put(fut)
            return
        if place.send:                  # a forward of the bytes received, as they came
            sender.put(frames)
        pending.append(fut)

    def _read(self, view):
        ring, piece = self.ring, self.piece
        try:
            if ring._frames is not None:
                return _recv_wire(self.link, view, piece)
            return [self.link.recv_frame(_limit(p.size)) for p in _pieces(view, piece)]
        except CollectiveError:
            if self.woken:
                raise _SelfWoken() from None
            raise

    def _encoder(self, keep, forward):
        """What codes a place sent on: the owner's keep (and the loss recorded), the
        reduce-scatter's recorded encode, or a forward's plain one (a final block re-codes
        unchanged: no loss to record)."""
        ring, piece = self.ring, self.piece
        div = self.div if keep else 1
        if ring._frames is not None:
            coder = ring._scaled if forward and not keep else ring._frames
            return functools.partial(_encode_wire, coder, piece=piece, keep=keep, divide_by=div)
        if keep:
            encode = functools.partial(ring._encode_keep, divide_by=div)
        elif forward:
            rec = ring._recorder
            encode = (rec.inner if rec is not None else ring.codec).encode
        else:
            encode = ring.codec.encode
        return functools.partial(_encode_pieces, encode, piece=piece)

    def _wake(self):
        # A thread failed: unblock every blocking call on the data connections.
        self.woken = True
        for link in (self.ring.prev, self.ring.next):
            try:
                link.data.shutdown(2)
            except OSError:
                pass


class _SelfWoken(Exception):
    """This thread's read failed because another thread shut the connections."""


def _land(ring, frames, place, code):
    """A received chunk decoded into its place (added, or stored divided), then coded
    for the next hop where `code` is given; returns what the sender sends, or None."""
    try:
        _decode_pieces(ring.codec, frames, place.view, place.add, ring.piece, place.div)
    except ValueError as e:
        raise CollectiveError(f"rank {ring.prev.peer} sent bytes that do not decode: {e}") \
            from None
    return code(place.view) if code is not None else None


def _pieces(view, piece):
    return [view[i:i + piece] for i in range(0, view.size, piece)]


def _encode_pieces(encode, view, piece):
    """A chunk's frames: one per piece, coded in order by one pool task."""
    return [encode(p) for p in _pieces(view, piece)]


def _decode_pieces(codec, frames, view, add, piece, divide_by=1):
    """A chunk's frames decoded into (or added to) their pieces of view, by one task."""
    if isinstance(frames, _Wire):
        codec.decode_frames(frames.data, view, piece, add, divide_by)
        return
    for frame, p in zip(frames, _pieces(view, piece)):
        decode_into(codec, frame, p, add, divide_by)


class _Wire(NamedTuple):
    """A chunk's frames as the wire carries them (each length-prefixed: Link.send_wire)."""
    data: np.ndarray
    frames: int


def _encode_wire(coder, view, piece, keep, divide_by):
    """A chunk's frames in one call (the codec's encode_frames), by one pool task."""
    return _Wire(coder.encode_frames(view, piece, keep=keep, divide_by=divide_by),
                 -(-view.size // piece))


def _recv_wire(link, view, piece):
    """A chunk's frames read as they came into one buffer (decoded in one call and, in
    the all-gather, forwarded as they are)."""
    pieces = _pieces(view, piece)
    buf = np.empty(sum(4 + _limit(p.size) for p in pieces), np.uint8)
    mv, pos = memoryview(buf), 0
    for p in pieces:
        pos += link.recv_frame_into(mv[pos:], _limit(p.size))
    return _Wire(buf[:pos], len(pieces))


def _limit(n: int) -> int:
    """The longest frame of n values: the codecs' largest groups."""
    return 2 * -(-n // 8) + 4 * n


class _FrameSender(LinkSender):
    """Sends coded chunks in order: each a chunk's frames (a _Wire, or a list of
    bytes), or the future of a task that returns them."""

    def __init__(self, ring, on_error):
        self.ring = ring                  # before the thread starts: _send reads it
        super().__init__(ring.next, on_error)

    def _send(self, item):
        bodies = item.result() if isinstance(item, cf.Future) else item
        if isinstance(bodies, _Wire):
            self.link.send_wire(bodies.data)
            self.ring.bytes_sent += bodies.data.size
            self.ring.payload_bytes += bodies.data.size - 4 * bodies.frames
            return
        self.link.send_frames(bodies)
        self.ring.bytes_sent += sum(4 + len(b) for b in bodies)
        self.ring.payload_bytes += sum(len(b) for b in bodies)

    def put(self, item):
        if self.error is not None:
            raise self.error
        self.q.put(item)

    def finish(self):
        self.q.put(None)
        self.thread.join()
        return self.error
