"""The DDP hook's defaults on the LeNet-like CNN: the scale-following bound with error
feedback (`IncState()`) against the absolute bound 2^-10 alone and the float32 ring
(gloo's numbers), with the loss averaged and summed over the batch (the same update:
the sum's learning rate is the mean's divided by the batch).

The hook's exchange is simulated with the project's own pieces: each rank compensates
its gradient with its `Memory` (drivers/collectives/memory.py, one residual per
parameter tensor), runs the communicator's ring program (`communicator.ring_allreduce`,
the code the real ranks run; one chunk per block, as the real ring's 64 Ki-float chunks
give on this 42.8k-parameter model) through its own `LossRecorder` of a `ScaledCodec`,
and keeps the loss it recorded. Bytes are the ring's coded bytes per rank, the scale
byte included.
"""

from __future__ import annotations

import numpy as np

from inceptionn.drivers.collectives.codecs import ObjectCodec, ScaledCodec, WireCodec
from inceptionn.drivers.collectives.compressors.truncation import TruncCodec
from inceptionn.drivers.collectives.memory import LossRecorder, Memory
from inceptionn.drivers.collectives import communicator

from .harness import Group, lenet, pct, signed

TITLE = "The DDP hook's defaults: the bound follows the gradients' scale, with error feedback"

METHODS = {"none": "float32 ring (gloo's numbers)",
           "hook-absolute": "absolute bound 2^-10",
           "hook-default": "`IncState()`: scaled, error feedback"}
REDUCTIONS = ("mean", "sum")
K = 10
# Error feedback for truncation (the hook's error_feedback=True with method
# "truncation"): 22 bits, with and without, loss averaged.
TRUNCATION = {"hook-t22": "truncation, 22 bits", "hook-t22-ef": "truncation, 22 bits, error feedback"}
EXCHANGES = ("hook-absolute", "hook-default") + tuple(TRUNCATION)


class HookExchange:
    """P ranks' exchanges of the hook: `run(grads) -> (sum, bytes sent per rank)`."""

    def __init__(self, method: str, sizes, world: int):
        if method not in EXCHANGES:
            raise ValueError(f"no hook exchange {method!r}")
        self.method = method
        self.layout = [(i, int(n)) for i, n in enumerate(sizes)]
        feedback = method == "hook-default" or method.endswith("-ef")
        self.memories = [Memory() for _ in range(world)] if feedback else None
        self.world = world

    def _codec(self):
        if self.method == "hook-default":
            return ScaledCodec(K)
        if self.method.startswith("hook-t"):        # truncation of the low bits
            return ObjectCodec(TruncCodec(int(self.method[6:8])))
        return WireCodec("bounded", K)

    def run(self, grads):
        recs = [LossRecorder(self._codec()) for _ in range(self.world)]

        def program(t):
            r = t.rank
            x = np.array(grads[r], np.float32)
            if self.memories is not None:
                self.memories[r].compensate(x, self.layout)
                recs[r].start(x)
            yield from communicator.ring_allreduce(t, x, recs[r])
            if self.memories is not None:
                self.memories[r].update(self.layout, recs[r].stop())
            return x

        out, ts = communicator.play(program, self.world)
        return out[0], [t.sent for t in ts]


def configs(scale):
    return [lenet(scale, m, reduction=red) for red in REDUCTIONS for m in METHODS] + \
        [lenet(scale, m) for m in TRUNCATION]


def analyse(runs, scale):
    rows = []
    for red in REDUCTIONS:
        base = Group(runs, lenet(scale, "none", reduction=red), scale)
        for m, label in METHODS.items():
            g = Group(runs, lenet(scale, m, reduction=red), scale)
            rows.append(dict(reduction=red, method=m, label=label, acc=g.acc,
                             delta=g.minus(base), sent=g.sent, fewer=base.sent / g.sent))
    base = Group(runs, lenet(scale, "none"), scale)
    for m, label in TRUNCATION.items():
        g = Group(runs, lenet(scale, m), scale)
        rows.append(dict(reduction="mean", method=m, label=label, acc=g.acc,
                         delta=g.minus(base), sent=g.sent, fewer=base.sent / g.sent))
    return {"rows": rows, "workers": scale.workers, "steps": scale.steps}


def section(res):
    L = [f"## {TITLE}", "",
         f"The LeNet-like CNN on digits, P = {res['workers']}, {res['steps']} steps; the "
         "hook's exchange simulated with the ring's own program, memory and codecs "
         "(study/default_hook.py). Bytes per worker per step, and how many times fewer "
         "than the float32 ring's.", "",
         "| loss | method | accuracy % | vs float32 ring, points (paired) | "
         "bytes/worker/step | fewer |", "|---|---|---|---|---|---|"]
    for r in res["rows"]:
        L.append(f"| {r['reduction']} | {r['label']} | {pct(r['acc'])} | "
                 f"{signed(r['delta'], 2)} | {r['sent']:,.0f} | {r['fewer']:.1f}x |")
    L.append("")
    return L
