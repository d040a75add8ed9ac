"""A communicator transport on the project's own sockets: every collective of
the communicator between processes without torch.distributed.

Links come from `rendezvous` (authenticated, transport.py's trust model), one to every
other rank (gTop-k's tree talks to ranks 2^j away); a message is one `send_frame` on the
pair's plain data connection. A sender thread per link sends while this rank receives,
so a send never waits for the peer's recv (the schedules send first); `flush` waits for
the queued sends. A dead peer closes its sockets and a silent one runs out the sockets'
timeout: both are a CollectiveError. The transport moves bytes only; which ring an
element-wise sum goes around is the communicator's choice (communicator.ring_sum).
"""

from __future__ import annotations

import threading
import time

from ... import sockets
from .agreement import agree_via_store
from .sender import LinkSender
from .links import DEFAULT_TIMEOUT, Collective, CollectiveError, rendezvous

__all__ = ["SocketTransport"]

_LIMIT = 1 << 31     # a frame longer than this is a protocol error


class _FrameQueue(LinkSender):
    """Sends byte strings as frames; an Event in the queue is set when reached (flush)."""

    def __init__(self, link):
        super().__init__(link, lambda: None)   # a dead peer's frames fail on receipt too

    def _send(self, item):
        if isinstance(item, threading.Event):
            item.set()
        else:
            self.link.send_frame(item)


class SocketTransport(Collective):
    """Rank `rank` of `world` over `links` ({peer: Link}, every other rank)."""

    def __init__(self, rank, world, links, *, timeout=DEFAULT_TIMEOUT):
        self.rank, self.world, self.timeout = rank, world, timeout
        self._links = links
        self._senders = {peer: _FrameQueue(link) for peer, link in links.items()}
        self.sent = self.received = 0

    @classmethod
    def from_store(cls, store, rank: int, world: int, *, host: str = "127.0.0.1",
                   prefix: str = "inceptionn/p2p", timeout=DEFAULT_TIMEOUT,
                   settings: dict | None = None):
        """Links to every other rank from a rendezvous store, after every rank's
        `settings` were compared (a difference is a SettingsMismatch on every rank)."""
        agree_via_store(store, prefix, rank, world, dict(settings or {}, collective="p2p"),
                        timeout)
        peers = [p for p in range(world) if p != rank]
        links = rendezvous(store, rank, world, peers, host=host, prefix=prefix, compress=False,
                           mss=sockets.GRADIENT_MSS, dscp=sockets.DSCP_DEFAULT,
                           timeout=timeout)
        return cls(rank, world, links, timeout=timeout)

    def send(self, peer, data):
        sender = self._senders[peer]
        if sender.error is not None:
            raise sender.error
        sender.put(bytes(data))
        self.sent += len(data)

    def recv(self, peer):
        data = bytes(self._links[peer].recv_frame(_LIMIT))
        self.received += len(data)
        return data

    def flush(self):
        """Wait until every queued message is on its socket."""
        deadline = time.monotonic() + self.timeout + 5
        for peer, sender in self._senders.items():
            done = threading.Event()
            sender.put(done)
            while not done.wait(0.05):      # a failed sender skips the rest of its queue
                if sender.error is not None:
                    raise sender.error
                if time.monotonic() > deadline:
                    raise CollectiveError(f"rank {peer} stopped reading (timeout)")
            if sender.error is not None:
                raise sender.error

    def close(self):
        for sender in self._senders.values():
            sender.put(None)
        super().close()
        self._senders = {}
