"""The DDP hook's defaults on the LeNet-like CNN: the scale-following bound with error
feedback (`IncState()`) against the absolute bound 2^-10 alone and the float32 ring
(gloo's numbers), with the loss averaged and summed over the batch (the same update:
the sum's learning rate is the mean's divided by the batch).

The exchange is the hook's own: each simulated rank holds an IncState set as the variant
says, and its worker's exchange of a bucket (drivers/collectives/hook.py: its codec, its
error-feedback memory, `HookWorker.feeding`) runs around the communicator's ring program
(`communicator.ring_allreduce`, the schedule the real rings play; one chunk per block, as
the real ring's 64 Ki-float chunks give on this 42.8k-parameter model), the P ranks
played in one process. Bytes are the ring's coded bytes per rank, the scale byte
included.
"""

from __future__ import annotations

import numpy as np

from inceptionn.ddp_hook import IncState
from inceptionn.drivers.collectives import communicator

from .harness import Group, lenet, pct, signed

TITLE = "The DDP hook's defaults: the bound follows the gradients' scale, with error feedback"

METHODS = {"none": "float32 ring (gloo's numbers)",
           "hook-absolute": "absolute bound 2^-10",
           "hook-default": "`IncState()`: scaled, error feedback"}
REDUCTIONS = ("mean", "sum")
# Error feedback for truncation (the hook's error_feedback=True with method
# "truncation"): 22 bits, with and without, loss averaged.
TRUNCATION = {"hook-t22": "truncation, 22 bits", "hook-t22-ef": "truncation, 22 bits, error feedback"}
# Each variant as the hook's settings.
SETTINGS = {"hook-absolute": dict(bound="absolute"),
            "hook-default": {},
            "hook-t22": dict(method="truncation", method_kw={"bits": 22}),
            "hook-t22-ef": dict(method="truncation", method_kw={"bits": 22}, error_feedback=True)}
EXCHANGES = tuple(SETTINGS)


class HookExchange:
    """P ranks' exchanges of the hook: `run(grads) -> (sum, bytes sent per rank)`."""

    def __init__(self, method: str, sizes, world: int):
        if method not in SETTINGS:
            raise ValueError(f"no hook exchange {method!r}")
        self.method = method
        self.layout = [(i, int(n)) for i, n in enumerate(sizes)]
        # One hook per rank: each keeps its own memory, as each process's hook does.
        self.workers = [IncState(**SETTINGS[method]).worker for _ in range(world)]
        self.world = world

    def run(self, grads):
        def program(t):
            w = self.workers[t.rank]
            x = np.array(grads[t.rank], np.float32)
            with w.feeding(x, self.layout):
                yield from communicator.ring_allreduce(t, x, w.codec)
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
         "hook's own exchange (its codec and memory) around the ring's program "
         "(study/hook_defaults.py). Bytes per worker per step, and how many times fewer "
         "than the float32 ring's.", "",
         "| loss | method | accuracy % | vs float32 ring, points (paired) | "
         "bytes/worker/step | fewer |", "|---|---|---|---|---|---|"]
    for r in res["rows"]:
        L.append(f"| {r['reduction']} | {r['label']} | {pct(r['acc'])} | "
                 f"{signed(r['delta'], 2)} | {r['sent']:,.0f} | {r['fewer']:.1f}x |")
    L.append("")
    return L
