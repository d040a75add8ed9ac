"""How ranks reach each other: the links (sockets, their rendezvous and trust model)
and every transport that plays the ring schedule (ring_schedule.py) or the
communicator's programs over them.

  links.py          a data and a control socket per neighbour, from a rendezvous store
  sender.py         a link's sender thread (a rank sends while it receives)
  socket_ring.py    Ring: Algorithm 1 on the project's sockets, pipelined (wires plain,
                    nic, emulate, software)
  torch_ring.py     TorchRing: Algorithm 1 over the process group's point-to-point,
                    coded on the buffer's device; torch_scaled.py its scaled bound
  socket_p2p.py     SocketTransport: the communicator's messages on the sockets
  torch_p2p.py      TorchTransport: the communicator's messages over the process group
  wa.py             WorkerAggregator (WA, WA+C): rank 0 aggregates
  agreement.py      every rank's settings compared at set-up (SettingsMismatch)
  local_store.py    LocalStore: a rendezvous store for ranks that are threads of one process

The torch transports import torch; this package's own import does not.
"""

from .links import DEFAULT_TIMEOUT, CollectiveError
from .local_store import LocalStore
from .socket_ring import DEFAULT_CHUNK, WIRES, Ring
from .wa import WorkerAggregator

__all__ = ["Ring", "WorkerAggregator", "CollectiveError", "DEFAULT_CHUNK", "DEFAULT_TIMEOUT",
           "WIRES", "LocalStore"]
