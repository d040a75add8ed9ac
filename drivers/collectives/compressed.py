"""The companion papers' compressors (drivers.collectives.compressors) on a torch.distributed process
group: one step of a method's collective between real processes.

`step(comp, grad, state)` returns the SUM over ranks (identical on every rank), the new
state and the bytes this rank sent. The collectives are the communicator's,
the code the simulation (compressors.collectives.run) runs, so the numbers and the
bytes are the simulated ones: preludes, all-gathers and gTop-k's tree over the process
group's point-to-point messages (torch_p2p.TorchTransport); the element-wise methods
(random-k with a shared seed, ScaleCom, none, INCEPTIONN's codecs, truncation) around
the socket ring (`Ring`, wire "software", the method's codec on every hop, pipelined)
when it is passed as `ring=`, else around the process group, one message per hop.
"""

from __future__ import annotations

import numpy as np
import torch.distributed as dist

from . import communicator
from .transports.torch_p2p import TorchTransport
from .transports.links import DEFAULT_TIMEOUT

__all__ = ["step", "prelude"]


def prelude(comp, grad, state, group=None, timeout=DEFAULT_TIMEOUT):
    """The method's prelude over the process group: TernGrad's shared scalers (max),
    ScaleCom's leader indices."""
    t = TorchTransport(group, timeout=timeout)
    out = communicator.drive(communicator.prelude(comp, grad, state, t), t)
    t.flush()
    return out


def step(comp, grad: np.ndarray, state, group=None, ring=None, timeout=DEFAULT_TIMEOUT):
    """One step of `comp` on this rank: (sum over ranks, new state, bytes sent). Methods
    summed element-wise go around `ring` (a Ring of the same ranks carrying comp.codec,
    wire "software"), or without one around the process group's point-to-point. A peer
    silent for `timeout` seconds, or gone, is a CollectiveError."""
    if (dist.get_rank(group), dist.get_world_size(group)) != (state.rank, state.world):
        raise ValueError(f"state is rank {state.rank} of {state.world}, the process group says "
                         f"{dist.get_rank(group)} of {dist.get_world_size(group)}")
    t = TorchTransport(group, timeout=timeout)
    before = ring.payload_bytes if ring is not None else 0
    result, state = communicator.step(comp, grad, state, t, ring)
    t.flush()       # not after a failure: a dead peer would hold it for the group's timeout
    around = ring.payload_bytes - before if ring is not None else 0
    return result, state, t.sent + around
