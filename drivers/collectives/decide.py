"""Per bucket, the coded exchange (the ring), the process group's own all-reduce (gloo or
NCCL) of float32, or its all-reduce of float16 (torch's fp16_compress_hook: fp16.py):
whichever the hook has measured to be fastest for that bucket, the
same on every rank.

Every path is timed from the hook's call to the bucket's sum ready, its passes over
the bucket included wherever they run: the coded path's time is the snapshot on DDP's
thread (the copy with the residual added in) plus the exchange on the hook's thread,
so the codec's CPU time (on a machine with few cores the coding competes with backward
for them), the wire's and the pipeline's; a plain path's, issued from the hook's call,
its own pass (fp16's rounding) and the process group's all-reduce to
its callback's widening. Nothing is configured: a
bucket's schedule is fixed by how often it has been exchanged (`calls`), so every rank
is at the same point of it for the same bucket:

- its first 3 * PROBES exchanges cycle ring, all-reduce, fp16, ring, ... (the first of
  each path is warm-up: sockets, thread pools, first-touch pages; not counted; of the
  others the fastest is the estimate: other work on the machine only ever slows a
  path, and one sample each chose the slower path in a benchmark run);
- then, at call `decide_at`, the ranks agree: each contributes its three estimates,
  the process group takes their maximum (the slowest rank sets the step), and every
  rank compares the same three numbers, so every rank takes the same path (a tie goes
  to the all-reduce, then fp16: the exact path first). One all-reduce of three floats per decision, on the same thread
  and group as the buckets' exchanges, so in the same order on every rank: never a
  deadlock;
- the decision holds HOLD_CALLS calls times how many times slower the second fastest
  path was (at most HOLD_MAX); the calls just before the next decision run each other
  path once, in PATHS order, to refresh their estimates (rates move with load: HiPress and Espresso's point).

The path taken keeps a running estimate (ALPHA); a probe of another path replaces
that path's estimate (its only fresh sample). The state of each bucket (`Choice`) is
data and is saved with the hook's state (hook_state.py): a resumed run continues the
schedule where it stopped, and between two decisions takes the saved path.
"""

from __future__ import annotations

import logging
import math
from dataclasses import asdict, dataclass, field

__all__ = ["DECIDES", "PATHS", "Choice", "Decisions"]

DECIDES = ("auto", "ring", "allreduce", "fp16")
PATHS = ("ring", "allreduce", "fp16")
PREFER = ("allreduce", "fp16", "ring")     # a tie's order: exact first, then fewer CPU
PROBES = 3          # runs of each path before the first decision; the first is warm-up
HOLD_CALLS = 50     # calls a decision holds at least ...
HOLD_MAX = 1000     # ... and at most (a lopsided one is probed less often)
ALPHA = 0.25        # the running estimate: (1 - ALPHA) old + ALPHA sample

log = logging.getLogger("inceptionn.hook")


@dataclass
class Choice:
    """One bucket's decision state (a bucket: its parameters, in order)."""
    calls: int = 0                  # exchanges of this bucket so far
    path: str = "ring"              # the path decided (before the first decision: none)
    decide_at: int = len(PATHS) * PROBES    # the call at which the ranks next agree
    seconds: dict = field(default_factory=lambda: {p: math.nan for p in PATHS})
    taken: dict = field(default_factory=lambda: {p: 0 for p in PATHS})
    agreed: dict = field(default_factory=dict)    # the slowest rank's estimates, last agreed

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        c = cls(calls=int(d["calls"]), path=str(d["path"]), decide_at=int(d["decide_at"]),
                # a state saved before fp16 was a path has no entry for it
                seconds={p: float(d["seconds"].get(p, math.nan)) for p in PATHS},
                taken={p: int(d["taken"].get(p, 0)) for p in PATHS},
                agreed={p: float(v) for p, v in d.get("agreed", {}).items()})
        if c.path not in PATHS:
            raise ValueError(f"a saved decision names path {c.path!r}: the state is damaged")
        # saved with fewer probes (PROBES was 2): finish this schedule's, then agree
        first = len(PATHS) * PROBES
        if c.calls < first or c.decide_at < c.calls:
            c.decide_at = max(first, c.calls)
        return c


class Decisions:
    """The per-bucket decisions of one hook. `mode`: "auto", or a path forced ("ring",
    "allreduce", "fp16": no probe, no agreement). `agree(values) -> values` takes this rank's
    estimates and returns the maximum over the ranks (an all-reduce)."""

    def __init__(self, mode: str):
        if mode not in DECIDES:
            raise ValueError(f"decide must be one of {DECIDES}, got {mode!r}")
        self.mode = mode
        self.by_bucket: dict[tuple, Choice] = {}

    def path(self, key: tuple, agree) -> str:
        """The path of this bucket's next exchange (agreeing with the ranks where the
        schedule says so)."""
        if self.mode != "auto":
            return self.mode
        c = self.by_bucket.setdefault(key, Choice())
        if c.calls < len(PATHS) * PROBES:
            return PATHS[c.calls % len(PATHS)]
        if c.calls == c.decide_at:
            self._decide(key, c, agree)
            return c.path
        return self.peek(key) or c.path

    def peek(self, key: tuple) -> str | None:
        """The path of this bucket's next exchange where the schedule fixes it without
        an agreement (a forced mode, a held decision, a probe); None where the next call
        agrees (or the bucket is new). Reads only: the hook asks it from DDP's thread."""
        if self.mode != "auto":
            return self.mode
        c = self.by_bucket.get(key)
        if c is None or c.calls == c.decide_at:
            return None
        if c.calls < len(PATHS) * PROBES:
            return PATHS[c.calls % len(PATHS)]
        others = [p for p in PATHS if p != c.path]
        before = c.decide_at - c.calls      # the probes: the calls just before a decision
        if before <= len(others):
            return others[len(others) - before]
        return c.path

    def record(self, key: tuple, path: str, seconds: float) -> None:
        """The exchange just run on `path` took `seconds` (this rank's wall time)."""
        c = self.by_bucket.get(key)
        if c is None:           # forced: counted only
            c = self.by_bucket.setdefault(key, Choice(path=path))
        c.calls += 1
        c.taken[path] += 1
        if self.mode != "auto" or c.taken[path] == 1:   # the first run of a path: warm-up
            return
        old = c.seconds[path]
        probing = c.calls <= len(PATHS) * PROBES
        if math.isnan(old) or (not probing and path != c.path):
            c.seconds[path] = seconds       # the first sample, or a probe's fresh one
        elif probing:
            c.seconds[path] = min(old, seconds)
        else:
            c.seconds[path] = (1 - ALPHA) * old + ALPHA * seconds

    def _decide(self, key, c: Choice, agree) -> None:
        c.agreed = dict(zip(PATHS, (float(v) for v in agree([c.seconds[p] for p in PATHS]))))
        # NaN (a path never timed: a resumed run's old state) ranks last
        ranked = sorted(PREFER, key=lambda p: (math.isnan(c.agreed[p]), c.agreed[p]))
        c.path = ranked[0]
        fast, slow = c.agreed[ranked[0]], c.agreed[ranked[1]]
        ratio = slow / fast if fast > 0 and not math.isnan(slow) else HOLD_MAX
        hold = int(min(HOLD_MAX, max(HOLD_CALLS, HOLD_CALLS * ratio)))
        c.decide_at = c.calls + hold
        if log.isEnabledFor(logging.DEBUG):
            n = sum(int(m) for _, m in key)
            log.debug("bucket of %d values (%d parameters, first %s): %s (slowest rank's "
                      "estimates) -> %s for %d calls", n, len(key), key[0][0] if key else None,
                      ", ".join(f"{p} {v * 1e3:.3f} ms" for p, v in c.agreed.items()),
                      c.path, hold)

    def report(self) -> list[dict]:
        """Every bucket's decision state, readable: its parameters' keys, the path, the
        estimates (seconds per exchange, this rank's and the last agreed), the counts."""
        return [{"params": [k for k, _ in key], "values": sum(int(n) for _, n in key),
                 **c.as_dict()} for key, c in self.by_bucket.items()]

    def state(self) -> list[dict]:
        return [{"params": [int(k) for k, _ in key], **c.as_dict()}
                for key, c in self.by_bucket.items()]

    def load(self, saved: list, sizes: list[int]) -> None:
        by = {}
        for d in saved:
            keys = [int(k) for k in d["params"]]
            if any(not 0 <= k < len(sizes) for k in keys):
                raise ValueError("the hook state's decisions name parameters its parameter "
                                 "list does not hold: the state is damaged")
            by[tuple((k, sizes[k]) for k in keys)] = Choice.from_dict(d)
        self.by_bucket = by


# ---------------------------------------------------------------- over the process group


def _on(pg, device):
    """Where the group's collectives take their tensors: the bucket's GPU under NCCL,
    the host otherwise (gloo)."""
    import torch
    import torch.distributed as dist
    return device if dist.get_backend(pg) == "nccl" else torch.device("cpu")


def agree_max(values, pg, device) -> list[float]:
    """The maximum over the group's ranks of each of `values` (one all-reduce)."""
    import torch
    import torch.distributed as dist
    t = torch.tensor([float(v) for v in values], dtype=torch.float64, device=_on(pg, device))
    dist.all_reduce(t, op=dist.ReduceOp.MAX, group=pg)
    return t.cpu().tolist()


def plain_allreduce(t, pg, device) -> None:
    """Sum the float32 tensor `t` over the group in place with the group's own all-reduce
    (through the bucket's GPU under NCCL)."""
    import torch.distributed as dist
    on = _on(pg, device)
    if t.device == on:
        dist.all_reduce(t, group=pg)
        return
    d = t.to(on)
    dist.all_reduce(d, group=pg)
    t.copy_(d)


def ring_bytes(n: int, world: int) -> int:
    """The bytes one rank sends in a ring all-reduce of n float32 values."""
    return 2 * (world - 1) * 4 * n // world if world > 1 else 0
