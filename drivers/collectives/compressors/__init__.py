"""Gradient compressors on one interface, INCEPTIONN's among them (docs/compressors.md).

    comp = make("topk", k=0.01)
    states = [comp.init(d, rank=r, world=P, seed=0) for r in range(P)]
    ex = collectives.run(comp, grads, states)   # ex.results, ex.sent, ex.recv, ex.states

or, for one worker, `payload, state = comp.compress(g, state)`,
`comp.decompress(payload, g.size, state)` and `state = comp.finish(state)` (error
feedback, for the methods that keep it, is the communicator's: communicator.exchange).

Adding a method: its module here (a Compressor subclass that sets `collective`, and
`feedback` / `residual` if it keeps back what it does not send, `needs` for what it takes
from the caller's context, `wires` / `ring_native` where the ring transports carry it
themselves), and one row in METHODS. The DDP hook makes every method here, by name, and
reads what each declares.
"""

from . import collectives
from .base import (COLLECTIVES, WHOLE, Compressor, DenseCompressor, Float32Codec, NoCompression, Payload,
                   Reducible, State, topk_indices)
from .gtopk import GTopK
from .inceptionn import GoldenCodec, Inceptionn, inceptionn
from .inceptionn_eb import EBCodec, inceptionn_eb
from .randomk import RandomK
from .scalecom import CLTK
from .terngrad import TernGrad
from .topk import TopK
from .truncation import TruncCodec, truncation

__all__ = ["COLLECTIVES", "WHOLE", "needs", "Compressor", "Reducible", "DenseCompressor",
           "NoCompression", "Payload", "State", "Float32Codec", "GoldenCodec", "Inceptionn", "EBCodec", "TruncCodec", "TernGrad", "TopK",
           "GTopK", "RandomK", "CLTK", "inceptionn", "inceptionn_eb", "truncation",
           "topk_indices", "collectives", "METHODS", "make"]


def _randomk(block):
    def make(k, **kw):
        return RandomK(k, block=block, **kw)
    make.needs = RandomK.needs          # what the hook reads (compressors.needs)
    return make


METHODS = {
    "none": NoCompression,
    "inceptionn": Inceptionn,        # k = 10, codec, bound = "absolute", share
    "inceptionn_eb": inceptionn_eb,  # k = 10
    "truncation": truncation,        # bits = 16, 22 or 24
    "terngrad": TernGrad,            # layers, clip = 2.5, feedback = False
    "topk": TopK,                    # k, value_k = None
    "gtopk": GTopK,                  # k
    "randomk": _randomk(False),      # k, layers, scope, shared, scale
    "blockk": _randomk(True),        # k, layers, scope, shared, scale
    "scalecom": CLTK,                # k, beta = 1.0, value_k = None
}


def needs(name: str) -> tuple[str, ...]:
    """What method `name` takes from its caller's context: "k" (a density), "layers"
    (the sizes of the gradient's parameters), "codec" (the value codec's settings),
    "feedback" (error feedback on or off); a factory without `needs` takes none."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    return tuple(getattr(METHODS[name], "needs", ()))


def make(name: str, **kw) -> Compressor:
    """A compressor by method name with its parameters (see METHODS)."""
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; known: {', '.join(METHODS)}")
    return METHODS[name](**kw)
