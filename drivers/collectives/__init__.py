"""Gradient exchange between ranks over TCP (docs/collectives.md).

  Ring               the paper's aggregator-free exchange (Algorithm 1)
  WorkerAggregator   the worker-aggregator baseline (WA, WA+C)

Both sum float32 buffers in place, bit-identical on every rank, with data on tagged
gradient sockets (compress=True, the NIC compresses) or the golden roundtrip applied
in software (emulate=True), and control on untagged sockets. The ring also has the
software wire (wire="software"): the codec's bytes on plain sockets, decoded on receipt. Built from a
torch.distributed Store (`from_store`), so torchrun's rendezvous sets them up.

The companion papers' compressors run the communicator's collectives
(the simulation's code) over a transport: torch_p2p.TorchTransport (torch.distributed
point-to-point; compressed.step, the DDP hook) or socket_p2p.SocketTransport (these
sockets, no torch), their element-wise sums around a Ring.
"""

from .agreement import SettingsMismatch
from .codecs import CODECS, WireCodec, make_codec
from .ring import DEFAULT_CHUNK, WIRES, Ring, block_bounds
from .transport import DEFAULT_TIMEOUT, CollectiveError
from .wa import WorkerAggregator

__all__ = ["Ring", "WorkerAggregator", "CollectiveError", "SettingsMismatch", "block_bounds",
           "DEFAULT_CHUNK", "DEFAULT_TIMEOUT", "WIRES", "CODECS", "WireCodec", "make_codec"]
