"""The worker-aggregator baseline (paper Fig. 12, WA and WA+C): every worker sends its
gradient to the aggregator, which sums in rank order and sends the sum back.

Only the gradient direction is compressed: workers send on tagged sockets (compress)
or through the golden roundtrip (emulate); the aggregator's replies are untagged,
full precision, so every rank ends with the aggregator's bytes. The aggregator is a
rank of its own (rank 0 by default) and contributes its own buffer, unrounded, first.

Two schedules, the same sums bit for bit:
- "pipelined" (the default): the aggregator sums chunk c from every worker and sends it
  back while the workers are still sending chunk c + 1, so the two legs overlap on
  full-duplex links;
- "sequential" (the paper's WA, Section II and Fig. 12): the aggregator receives every
  gradient, and only then sends the sum back: two legs one after the other, so that
  compressing the first shortens the exchange (the paper's WA+C).
"""

from __future__ import annotations

import numpy as np

from .... import golden
from ... import sockets
from ..codecs import make_codec
from .socket_ring import PIECE as DEFAULT_CHUNK     # floats per chunk (its frames)
from .sender import LinkSender
from .links import (DEFAULT_TIMEOUT, Collective, CollectiveError, as_float32_buffer,
                        rendezvous)

__all__ = ["WorkerAggregator", "SCHEDULES"]

SCHEDULES = ("pipelined", "sequential")


class WorkerAggregator(Collective):
    """`allreduce(x)`: x summed over all ranks through the aggregator, in place."""

    def __init__(self, rank, world, links, *, aggregator=0, k=golden.K_DEFAULT,
                 codec=golden.CODEC_DEFAULT, compress=False, emulate=False,
                 chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT, schedule="pipelined"):
        if compress and emulate:
            raise ValueError("compress (the NIC) and emulate (software) exclude each other")
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        self.schedule = schedule
        self.rank, self.world, self.aggregator = rank, world, aggregator
        self.k, self.compress, self.emulate = golden.check_k(k), compress, emulate
        self.codec = make_codec(codec, self.k)
        self.chunk, self.timeout = chunk, timeout
        self._links = links
        self.bytes_sent = 0
        self._broken = False
        if rank == aggregator:
            for link in links.values():      # replies go back untagged, full precision
                if compress:
                    sockets.untag_socket(link.data)

    @classmethod
    def from_store(cls, store, rank, world, *, aggregator=0, host="127.0.0.1",
                   prefix="inceptionn/wa", k=golden.K_DEFAULT, codec=golden.CODEC_DEFAULT,
                   compress=False, emulate=False, mss=sockets.GRADIENT_MSS,
                   dscp=sockets.DSCP_DEFAULT, chunk=DEFAULT_CHUNK, timeout=DEFAULT_TIMEOUT,
                   schedule="pipelined"):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if world < 1 or not 0 <= rank < world or not 0 <= aggregator < world:
            raise ValueError(f"rank {rank}, aggregator {aggregator} of world {world}: invalid")
        peers = [p for p in range(world) if p != rank] if rank == aggregator else [aggregator]
        links = rendezvous(store, rank, world, [p for p in peers if p != rank], host=host,
                           prefix=prefix, compress=compress, mss=mss, dscp=dscp, timeout=timeout)
        return cls(rank, world, links, aggregator=aggregator, k=k, codec=codec, compress=compress,
                   emulate=emulate, chunk=chunk, timeout=timeout, schedule=schedule)

    def allreduce(self, x) -> np.ndarray:
        x = as_float32_buffer(x, "allreduce buffer")
        if self._broken:
            raise CollectiveError("broken by an earlier failure; build a new one")
        if self.world == 1:
            return x
        try:
            if self.rank == self.aggregator:
                self._aggregate(x)
            else:
                self._work(x)
        except BaseException:
            self._broken = True
            self.close()
            raise
        return x

    def _aggregate(self, x):
        workers = sorted(self._links)
        for w in workers:
            self._links[w].send_msg([self.rank, x.size])
        sizes = {w: self._links[w].recv_msg()[1] for w in workers}
        if any(n != x.size for n in sizes.values()):
            for w in workers:
                self._links[w].send_msg({"error": f"lengths differ: {sizes} vs {x.size}"})
            raise ValueError(f"buffer lengths differ between ranks: aggregator {x.size}, "
                             f"workers {sizes}")
        for w in workers:
            self._links[w].send_msg("ok")
        senders = [LinkSender(self._links[w], lambda: None) for w in workers]
        got = np.empty(min(self.chunk, x.size) or 1, np.float32)
        chunks = [(c0, min(c0 + self.chunk, x.size)) for c0 in range(0, x.size, self.chunk)]

        def reply(c0, c1):
            for sd in senders:
                if sd.error is not None:
                    raise sd.error
                sd.put(x[c0:c1])
                self.bytes_sent += x[c0:c1].nbytes

        try:
            for c0, c1 in chunks:
                part = got[:c1 - c0]
                for w in workers:                     # fixed order: rank by rank
                    self._links[w].recv_floats_into(part)
                    if self.emulate:
                        part[:] = self.codec.roundtrip(part)
                    np.add(x[c0:c1], part, out=x[c0:c1])
                if self.schedule == "pipelined":
                    reply(c0, c1)
            if self.schedule == "sequential":         # the second leg, once all is summed
                for c0, c1 in chunks:
                    reply(c0, c1)
        finally:
            for sd in senders:
                sd.finish()

    def _work(self, x):
        link = self._links[self.aggregator]
        link.send_msg([self.rank, x.size])
        link.recv_msg()
        verdict = link.recv_msg()
        if verdict != "ok":
            raise ValueError(f"the aggregator refused: {verdict['error']}")
        sender = LinkSender(link, lambda: None)
        try:
            for c0 in range(0, x.size, self.chunk):
                sender.put(x[c0:min(c0 + self.chunk, x.size)])
                self.bytes_sent += min(self.chunk, x.size - c0) * 4
            # The sum of chunk c arrives only after the aggregator has all of chunk c from
            # this rank, so it can overwrite x in place: no copy of the buffer is needed.
            for c0 in range(0, x.size, self.chunk):
                if sender.error is not None:
                    raise sender.error
                link.recv_floats_into(x[c0:min(c0 + self.chunk, x.size)])
        finally:
            sender.finish()
