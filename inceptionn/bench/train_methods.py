"""The methods `inceptionn bench train` compares, and the DDP hook each registers
(with the time from each call to its Future's completion recorded)."""

from __future__ import annotations

import os
import time

from ..drivers.collectives.decide import FIRST_DECIDED

__all__ = ["RATES", "WORLDS", "METHODS", "ACCURACY_METHODS", "EMULATE_METHODS", "REDUCTIONS",
           "MODELS", "LOOPBACK_ONLY", "DECIDE_STEPS", "NIC_RATES", "RUN_METHODS", "NIC_METHOD",
           "register"]

RATES = (0.1, 0.5, 1.0, 2.5, 10.0, None)        # Gb/s per host; None: unlimited
WORLDS = (2, 4)

# The timed grid: "ours" is the hook as a user registers it (`IncState()`), "ours-bounded"
# and "ours-paper" the absolute bound with each codec (the targets are the
# bounded one's).
METHODS = ("gloo", "fp16", "powersgd1", "powersgd4", "ours", "ours-bounded", "ours-paper")

# The accuracy comparison: `IncState()` ("ours": scale-following bound, error feedback)
# and the absolute bound alone ("ours-bounded"), next to gloo, fp16 and PowerSGD, with
# the loss summed and averaged over the batch, on the MLP and the study's CNN.
ACCURACY_METHODS = ("gloo", "fp16", "powersgd1", "powersgd4", "ours", "ours-bounded")

# The NIC path's numbers without a NIC (float32 on the wire, the golden roundtrip on
# receipt): its defaults ("ours-emulate-default": scaled, error feedback) against the
# absolute bound ("ours-emulate"); `--compare-methods` picks them.
EMULATE_METHODS = ("ours-emulate-default", "ours-emulate")

REDUCTIONS = ("sum", "mean")

MODELS = ("mlp", "cnn")

LOOPBACK_ONLY = ("ours-emulate",)

# Steps a deciding hook takes before its first decision is final: its probes (each
# path, ring, all-reduce and fp16, three times, DDP's first step the first), then a
# mix's trial (decide.py).
DECIDE_STEPS = FIRST_DECIDED

NIC_RATES = (0.1, 1.0, None)                    # Gb/s per port; None: no rate limit

# Every method --methods can time (the hook each registers: _register); a rank also
# takes "ours-nic", the NIC path that --nic-rates runs.
# "ours-ring", "ours-allreduce", "ours-fp16": the defaults with every bucket on that path
# (decide="ring", ...), what "ours" chooses from.
# "none": no exchange at all (each rank keeps its own gradient): the step's floor on this
# machine, which no method's step can go below; its model diverges across ranks.
FORCED = ("ours-ring", "ours-allreduce", "ours-fp16")
RUN_METHODS = METHODS + FORCED + ("none",) + EMULATE_METHODS

NIC_METHOD = "ours-nic"


def _timed_hook(hook, times):
    """hook, with the time from each call to its Future's completion added to `times`."""
    def timed(state, bucket):
        t0 = time.perf_counter()
        fut = hook(state, bucket)

        def done(f):
            times.append(time.perf_counter() - t0)
            return f.value()
        return fut.then(done)
    return timed


def _no_exchange(state, bucket):
    """The bucket as it is, at once: no bytes leave the rank."""
    import torch
    fut = torch.futures.Future()
    fut.set_result(bucket.buffer())
    return fut


def register(net, method, decide="auto"):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    pg = None               # the default group
    times, state = [], None
    if method == "gloo":
        hook, st = default_hooks.allreduce_hook, pg
    elif method == "none":
        hook, st = _no_exchange, None
    elif method == "fp16":
        hook, st = default_hooks.fp16_compress_hook, pg
    elif method.startswith("powersgd"):
        st = powerSGD_hook.PowerSGDState(process_group=pg,
                                         matrix_approximation_rank=int(method[-1]),
                                         start_powerSGD_iter=2, use_error_feedback=True,
                                         warm_start=True)
        hook = powerSGD_hook.powerSGD_hook
    elif method in ("ours", "ours-emulate-default") + FORCED:   # the defaults, as a user
        wire = "emulate" if method == "ours-emulate-default" else "software"  # registers them
        forced = method[5:] if method in FORCED else decide      # every bucket on one path
        kw = {"decide": forced} if forced != "auto" else {}
        st = state = IncState(wire=wire, host=os.environ.get("INCEPTIONN_HOST"), timeout_s=120,
                              **kw)
        hook = inc_allreduce_hook
    else:                           # the absolute bound 2^-10 (the paper's reproductions)
        codec = "paper" if method.endswith("paper") else "bounded"
        wire = {"ours-emulate": "emulate", "ours-nic": "nic"}.get(method, "software")
        st = state = IncState(codec=codec, wire=wire, error_bound=2 ** -10, bound="absolute",
                              host=os.environ.get("INCEPTIONN_HOST"), timeout_s=120)
        hook = inc_allreduce_hook
    net.register_comm_hook(st, _timed_hook(hook, times))
    return times, state
