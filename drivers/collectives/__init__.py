"""Gradient exchange between ranks, in one package (docs/collectives.md), on GRACE's
split:

  compressors/       the methods (INCEPTIONN, truncation, TernGrad, top-k, gTop-k,
                     random-k, ScaleCom): what a rank sends, declared needs, residuals
  memory.py          error feedback: one Memory per rank, keyed by parameter
  ring_schedule.py   Algorithm 1's schedule, once, for every ring
  communicator.py    every collective once, one rank's program; the in-process transport
  transports/        how ranks reach each other: links.py (sockets, rendezvous, trust),
                     socket_ring.py (Ring), torch_ring.py and torch_scaled.py (the ring
                     over the process group), socket_p2p.py and torch_p2p.py (the
                     communicator's messages), wa.py (WorkerAggregator)
  hook.py            the DDP communication hook (inceptionn.ddp_hook names it)

Ring (the paper's aggregator-free exchange, Algorithm 1) and WorkerAggregator (WA,
WA+C) sum float32 buffers in place, bit-identical on every rank, with data on tagged
gradient sockets (compress=True, the NIC compresses) or the golden roundtrip applied
in software (emulate=True), and control on untagged sockets. The ring also has the
software wire (wire="software"): the codec's bytes on plain sockets, decoded on
receipt. Built from a torch.distributed Store (`from_store`), so torchrun's rendezvous
sets them up. The compressors run the communicator's collectives (the simulation's
code) over a transport, their element-wise sums around a Ring.
"""

from .transports.agreement import SettingsMismatch
from .codecs import CODECS, WireCodec, make_codec
from .ring_schedule import block_bounds
from .transports import DEFAULT_CHUNK, DEFAULT_TIMEOUT, WIRES, CollectiveError, Ring, WorkerAggregator

__all__ = ["Ring", "WorkerAggregator", "CollectiveError", "SettingsMismatch", "block_bounds",
           "DEFAULT_CHUNK", "DEFAULT_TIMEOUT", "WIRES", "CODECS", "WireCodec", "make_codec"]
