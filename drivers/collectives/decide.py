"""Per bucket, the coded exchange (the ring), the process group's own all-reduce (gloo or
NCCL) of float32, or its all-reduce of float16 (torch's fp16_compress_hook: fp16.py),
chosen by the training step each gives, the same on every rank.

What is compared is the step: the time from the end of one step's exchanges (its last
bucket's sum ready) to the end of the next step's, which holds everything a path costs
where it costs it: the
codec's CPU time taken from backward and from the other buckets' all-reduce (on a
machine with few cores the ring's threads compete with both), the wire's, the
pipeline's. A bucket's own exchange time does not: two paths within 10% of each other on
a bucket's clock gave steps 20% apart, either way, on 2 cores (docs/benchmarks.md). Why
the ends of the exchanges: they are the one point of a step the ranks pass together (the
last sum is ready on every rank within a hop), while a rank's first bucket comes when
its backward has had its share of the cores: at P = 4 on 2 cores, one step read
0.21-0.51 s on the four ranks from their first buckets, 0.408-0.418 from their ends
(docs/benchmarks.md). So the hook runs whole steps on one configuration ("config") and
times them:

- "ring", "allreduce", "fp16": every bucket on that path;
- "mix": each bucket on the path its own exchange times favour (each bucket's times,
  from the hook's call to its sum ready, the snapshot's pass included: `record`). The
  per-bucket times only propose this candidate; the steps decide whether it is taken.

The schedule is the hook's, counted in steps, so every rank is at the same point of it
(DDP hands the same buckets in the same order to every rank):

- its first START steps run the ring, not timed: DDP's first step, its bucket rebuild
  and the optimizer's first state make them the slowest of the run, whatever the path
  (at P = 2 and 2.5 Gb/s: 0.43 and 0.37 s, then 0.21, where the ring's steps settle
  at 0.17);
- the next 3 * PROBES steps run ring, all-reduce and fp16, PROBES steps each in a row
  (the first of each block is warm-up: sockets idle since the last step on that path,
  thread pools, first-touch pages; not counted; of the others the fastest is the
  estimate: other work on the machine only ever slows a step). Why so: cycled one
  step each from the first step, every probe followed a step on another path and the
  first ones bore DDP's start; the estimates ran 25-30% above the steps the same path
  gave back to back, the ring's most (docs/benchmarks.md), and a tie went away from the
  ring;
- at step `decide_at` the ranks agree, at its first bucket: each contributes its step
  estimates and its buckets' exchange estimates, the process group takes their maximum
  (the slowest rank sets the step), and every rank computes the same from the same
  numbers. One all-reduce, on the same thread and group as the buckets' exchanges, so
  in the same order on every rank: never a deadlock. Each bucket's mix path is its
  fastest; a mix not yet timed (its paths changed) is tried for TRIAL steps and the
  ranks agree again; else the fastest config is taken (a tie goes to the all-reduce,
  then fp16, then the mix: the exact path first, then fewer CPU), a config other than
  the all-reduce only where its estimate times 1 + MARGIN (1.05: the tolerance of
  "never slower than the all-reduce") is below the all-reduce's. Why: estimates that
  close differ by less than their noise (P = 4, 10 Gb/s: fp16 0.344 s, all-reduce
  0.347, the hook's steps after 1.07x gloo's; P = 2 unlimited: fp16 0.152, all-reduce
  0.158, 1.08x), and the all-reduce is the one path never slower than itself. Not
  more: the probes compress a real lead (P = 4, 2.5 Gb/s: ring 0.430 agreed against
  all-reduce 0.461, 7%, while the ring then stepped 0.342 against gloo's 0.434; a 10%
  margin took the all-reduce, 1.16x fp16's step);
- the decision holds until the probes that refresh the estimates cost PROBE_SHARE of the
  steps' time (at least HOLD_STEPS, at most HOLD_MAX steps): the steps just before the
  next decision run each other config REFRESH steps in a row, in CONFIGS order, the
  first of them warm-up, not timed (rates move with load: HiPress and Espresso's point),
  so a config far slower than the one taken is probed rarely and a near tie often.

The config taken keeps a running estimate (ALPHA); a probe of another replaces that
config's estimate (its only fresh sample). The schedule (`Steps`) and each bucket's state
(`Choice`) are data, saved with the hook's state (hook_state.py): a resumed run continues
the schedule where it stopped.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import asdict, dataclass, field

__all__ = ["DECIDES", "PATHS", "CONFIGS", "PROBED", "FIRST_DECIDED", "Choice", "Steps", "Decisions"]

DECIDES = ("auto", "ring", "allreduce", "fp16")
PATHS = ("ring", "allreduce", "fp16")
CONFIGS = PATHS + ("mix",)
PREFER = ("allreduce", "fp16", "ring")          # a bucket's tie: exact first, then fewer CPU
PREFER_CONFIG = ("allreduce", "fp16", "mix", "ring")
START = 2           # steps on the ring before the probes, not timed (DDP's start)
PROBES = 3          # steps of each path before the first decision; the first is warm-up
REFRESH = 2         # steps of each other config before a later decision; the first is warm-up
TRIAL = 2           # steps a new mix runs before the ranks agree again
HOLD_STEPS = 50     # steps a decision holds at least ...
HOLD_MAX = 1000     # ... and at most
PROBE_SHARE = 0.01  # ... and in between, until the probes cost this share of the steps' time
MARGIN = 0.05       # another config is taken over the all-reduce only this much faster
ALPHA = 0.25        # the running estimate: (1 - ALPHA) old + ALPHA sample
# The steps before the first decision is final (probes, then a mix's trial): a benchmark
# times from the step after.
PROBED = START + len(PATHS) * PROBES     # the first decision's step
FIRST_DECIDED = PROBED + TRIAL

log = logging.getLogger("inceptionn.hook")


def _nans(names) -> dict:
    return {p: math.nan for p in names}


@dataclass
class Choice:
    """One bucket's state (a bucket: its parameters, in order): its exchange times per
    path, and `path`, its fastest as last agreed (its path in the mix)."""
    calls: int = 0                  # exchanges of this bucket so far
    path: str = "allreduce"         # its path in the mix (before the first decision: none)
    seconds: dict = field(default_factory=lambda: _nans(PATHS))
    taken: dict = field(default_factory=lambda: {p: 0 for p in PATHS})
    agreed: dict = field(default_factory=dict)    # the slowest rank's estimates, last agreed

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Choice:
        c = cls(calls=int(d["calls"]), path=str(d["path"]),
                # a state saved before fp16 was a path has no entry for it
                seconds={p: float(d["seconds"].get(p, math.nan)) for p in PATHS},
                taken={p: int(d["taken"].get(p, 0)) for p in PATHS},
                agreed={p: float(v) for p, v in d.get("agreed", {}).items()})
        if c.path not in PATHS:
            raise ValueError(f"a saved decision names path {c.path!r}: the state is damaged")
        return c


@dataclass
class Steps:
    """The hook's schedule, in steps: the config decided and the step times per config."""
    step: int = -1                  # the step under way (-1: none begun)
    config: str = "ring"            # decided: a path for every bucket, or "mix"
    decide_at: int = PROBED         # the step whose first bucket agrees
    trial: bool = False             # a new mix runs until decide_at, unprobed
    seconds: dict = field(default_factory=lambda: _nans(CONFIGS))
    taken: dict = field(default_factory=lambda: {c: 0 for c in CONFIGS})
    agreed: dict = field(default_factory=dict)    # the slowest rank's step times, last agreed

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Steps:
        s = cls(step=int(d["step"]), config=str(d["config"]), decide_at=int(d["decide_at"]),
                trial=bool(d["trial"]),
                seconds={c: float(d["seconds"][c]) for c in CONFIGS},
                taken={c: int(d["taken"][c]) for c in CONFIGS},
                agreed={c: float(v) for c, v in d.get("agreed", {}).items()})
        if s.config not in CONFIGS or s.decide_at <= s.step:
            raise ValueError("the hook state's schedule is damaged "
                             f"(config {s.config!r}, step {s.step}, decide_at {s.decide_at})")
        return s

    def config_of(self, step: int, mixed: bool) -> str | None:
        """The config of `step` where the schedule fixes it (None: the step agrees)."""
        if step < PROBED:
            return PATHS[max(0, step - START) // PROBES]
        if step == self.decide_at:
            return None
        if self.trial:
            return self.config
        at = self._refresh(step, mixed)
        return self.config if at is None else at[0]

    def warm(self, step: int, mixed: bool) -> bool:
        """Whether `step` is a warm-up, its time not counted: DDP's start, the first of
        each path's probes, a refresh probe's first step."""
        if step < PROBED:
            return step < START or (step - START) % PROBES == 0
        if step == self.decide_at or self.trial:
            return False
        at = self._refresh(step, mixed)
        return at is not None and at[1] == 0

    def _refresh(self, step: int, mixed: bool) -> tuple[str, int] | None:
        """(the config, the step's place in its run) where `step` is one of the refresh
        probes, the REFRESH * (configs - 1) steps just before a decision; else None."""
        others = [c for c in CONFIGS if c != self.config and (c != "mix" or mixed)]
        ahead = REFRESH * len(others) - (self.decide_at - step)
        if ahead < 0:
            return None
        return others[ahead // REFRESH], ahead % REFRESH


class Decisions:
    """The decisions of one hook. `mode`: "auto", or a path forced ("ring", "allreduce",
    "fp16": no probe, no agreement). `agree(values) -> values` takes this rank's estimates
    and returns the maximum over the ranks (an all-reduce)."""

    def __init__(self, mode: str):
        if mode not in DECIDES:
            raise ValueError(f"decide must be one of {DECIDES}, got {mode!r}")
        self.mode = mode
        self.by_bucket: dict[tuple, Choice] = {}
        self.steps = Steps()
        self._handed: list[tuple] = []  # the buckets handed to the hook in the step under way
        # The buckets exchanged in the step under way and in the last whole one (a bucket
        # merging buckets of a saved layout is exchanged as those: hook_state.py). Read in
        # sorted order: the same on every rank, whichever thread recorded first.
        self._now: set[tuple] = set()
        self._last: set[tuple] = set()
        # The step clock: when the latest exchange ended (`record`), and when the step
        # before the one under way ended (None: the step under way is not timed).
        self._end: float | None = None
        self._mark: float | None = None
        self._paused = False            # the time until the next step is not training
        self._running: str | None = None    # its config (None: until its agreement)
        self._warm = False              # it is a warm-up (start, a probe block's first): untimed
        self._agreeing = False          # this step agrees, at its first bucket

    def begin(self, key: tuple, index: int | None = None) -> None:
        """DDP hands the hook bucket `key` (`index`: its place in DDP's order, where
        known). The first of a step (index 0; without an index, a bucket already handed
        in this step) begins one, and the step that ended is timed. On DDP's thread."""
        if self.mode != "auto":
            return
        first = index == 0 if index is not None else (not self._handed or key in self._handed)
        if first:
            # The step that ended is over: DDP has every bucket's sum (each recorded).
            # One with no exchange ended since its mark has no time to give.
            end = self._end
            if self._mark is not None and end is not None and end > self._mark \
                    and self._running is not None:
                if self._warm:
                    self.steps.taken[self._running] += 1
                else:
                    self.record_step(self._running, end - self._mark)
            # The step beginning is timed from that end. A process's first step (DDP's
            # start, or a resumed run's: no end yet) is counted, not timed.
            fresh = end is None
            self._mark = None if self._paused else (time.perf_counter() if fresh else end)
            self._paused = False
            if self._now:
                self._last = self._now
            self._now, self._handed = set(), []
            s = self.steps
            s.step += 1
            mixed = self._mixed()
            self._running = s.config_of(s.step, mixed)
            self._warm = s.warm(s.step, mixed) or fresh
            self._agreeing = self._running is None
        if key not in self._handed:
            self._handed.append(key)

    def pause(self) -> None:
        """The time until the next step begins is not this hook's training (an
        evaluation, a checkpoint, another model's steps): the step that holds it (the
        next one, timed from the end of the last exchange) is not timed."""
        self._paused = True

    def _mixed(self) -> bool:
        """Whether the mix puts the buckets on different paths (else it is one of the
        uniform configs, and not a candidate of its own)."""
        return len({self.by_bucket[k].path for k in self._last if k in self.by_bucket}) > 1

    def path(self, key: tuple, agree) -> str:
        """The path of this bucket's next exchange (agreeing with the ranks where the
        schedule says so: `agree` is called at a deciding step's first bucket)."""
        if self.mode != "auto":
            return self.mode
        c = self.by_bucket.setdefault(key, Choice())
        if self.steps.step < 0:         # an exchange with no step begun begins one
            self.begin(key)
        if self._running is None:
            self._decide(agree)
            self._running = self.steps.config
        return c.path if self._running == "mix" else self._running

    def peek(self, key: tuple) -> str | None:
        """The path of this bucket's next exchange where the schedule fixes it without
        an agreement; None for every bucket of a step that agrees (they go to the
        worker's thread, after the agreement). Reads only: the hook asks it from DDP's
        thread, after `begin`."""
        if self.mode != "auto":
            return self.mode
        if self._agreeing or self._running is None:
            return None
        if self._running == "mix":
            c = self.by_bucket.get(key)
            return c.path if c is not None else Choice.path
        return self._running

    def record(self, key: tuple, path: str, seconds: float) -> None:
        """The exchange of this bucket just run on `path` took `seconds` (this rank's
        wall time, from the hook's call to its sum ready)."""
        self._end = time.perf_counter()     # the step clock, read by begin
        c = self.by_bucket.get(key)
        if c is None:           # forced: counted only
            c = self.by_bucket.setdefault(key, Choice(path=path))
        c.calls += 1
        c.taken[path] += 1
        self._now.add(key)
        # the first run of a path, or a step not timed (warm-up): counted only
        if self.mode != "auto" or c.taken[path] == 1 or self._warm:
            return
        c.seconds[path] = _estimate(c.seconds[path], seconds, c.calls <= PROBED,
                                    path != c.path)

    def record_step(self, config: str, seconds: float) -> None:
        """The step just ended ran `config` and took `seconds` (this rank's wall time)."""
        s = self.steps
        s.taken[config] += 1
        if config in PATHS and s.taken[config] == 1:     # warm-up
            return
        s.seconds[config] = _estimate(s.seconds[config], seconds,
                                      s.step < PROBED or s.trial,
                                      config != s.config)

    def _decide(self, agree) -> None:
        s = self.steps
        keys = sorted(k for k in self._last if k in self.by_bucket)
        mine = [s.seconds[c] for c in CONFIGS] + [self.by_bucket[k].seconds[p]
                                                  for k in keys for p in PATHS]
        # untimed: infinitely slow (the maximum keeps it so; NaN's maximum is not defined)
        got = [float(v) for v in agree([math.inf if math.isnan(v) else v for v in mine])]
        s.agreed = dict(zip(CONFIGS, got))
        changed = False
        for i, k in enumerate(keys):
            c = self.by_bucket[k]
            at = len(CONFIGS) + len(PATHS) * i
            c.agreed = dict(zip(PATHS, got[at:at + len(PATHS)]))
            best = min(PREFER, key=lambda p: c.agreed[p])      # the first of a tie
            changed |= best != c.path
            c.path = best
        mixed = self._mixed()
        if changed or not mixed:        # the mix's time was another mix's
            s.seconds["mix"], s.agreed["mix"] = math.nan, math.inf
        if mixed and math.isinf(s.agreed["mix"]):
            s.config, s.trial, s.decide_at, hold = "mix", True, s.step + TRIAL, TRIAL
        else:
            ranked = sorted((c for c in PREFER_CONFIG if c != "mix" or mixed),
                            key=lambda c: s.agreed[c] * (1.0 if c == "allreduce" else 1.0 + MARGIN))
            # stable: a tie in PREFER_CONFIG's order
            s.config, s.trial = ranked[0], False
            hold = _hold(s.agreed[ranked[0]], [s.agreed[c] for c in ranked[1:]])
            s.decide_at = s.step + hold
        if log.isEnabledFor(logging.DEBUG):
            log.debug("step %d: step times (slowest rank's) %s; each bucket's fastest: %s "
                      "-> %s%s for %d steps", s.step,
                      ", ".join(f"{c} {v * 1e3:.1f} ms" for c, v in s.agreed.items()),
                      ", ".join(f"{sum(int(n) for _, n in k)} values {self.by_bucket[k].path}"
                                for k in keys), s.config, " (tried)" if s.trial else "", hold)

    def report(self) -> list[dict]:
        """Every bucket's state, readable: its parameters' keys, its values, `path` (the
        path the decided config gives it), `fastest` (its own fastest: its path in the
        mix), the exchange estimates (this rank's and the last agreed), the counts."""
        out = []
        for key, c in self.by_bucket.items():
            d = c.as_dict()
            d["fastest"] = d.pop("path")
            out.append({"params": [k for k, _ in key], "values": sum(int(n) for _, n in key),
                        "path": self._path_in(c, self.steps.config), **d})
        return out

    def _path_in(self, c: Choice, config: str) -> str:
        return c.path if config == "mix" else (self.mode if self.mode != "auto" else config)

    def state(self) -> dict:
        index = {key: i for i, key in enumerate(self.by_bucket)}
        return {"steps": self.steps.as_dict(), "last": sorted(index[k] for k in self._last
                                                              if k in index),
                "buckets": [{"params": [int(k) for k, _ in key], **c.as_dict()}
                            for key, c in self.by_bucket.items()]}

    def load(self, saved, sizes: list[int]) -> None:
        """A state() back. One saved before the decision was made by steps (a list of
        buckets) keeps its buckets' times and probes its configs afresh."""
        buckets = saved["buckets"] if isinstance(saved, dict) else saved
        by = {}
        for d in buckets:
            keys = [int(k) for k in d["params"]]
            if any(not 0 <= k < len(sizes) for k in keys):
                raise ValueError("the hook state's decisions name parameters its parameter "
                                 "list does not hold: the state is damaged")
            by[tuple((k, sizes[k]) for k in keys)] = Choice.from_dict(d)
        order = list(by)
        self.by_bucket = by
        if isinstance(saved, dict):
            self.steps = Steps.from_dict(saved["steps"])
            if any(not 0 <= i < len(order) for i in saved["last"]):
                raise ValueError("the hook state's decisions name a bucket they do not "
                                 "hold: the state is damaged")
            self._last = {order[i] for i in saved["last"]}
        else:
            self.steps, self._last = Steps(), set()
        self._now, self._handed = set(), []
        self._end, self._mark, self._paused = None, None, False
        self._running, self._agreeing, self._warm = None, False, False


def _hold(fast: float, others: list[float]) -> int:
    """Steps a decision holds: the probes of the `others` (REFRESH steps each, seconds
    per step) cost PROBE_SHARE of the steps at `fast` seconds, within
    HOLD_STEPS..HOLD_MAX. An untimed config (infinite) is not counted: it is probed at
    the next refresh."""
    extra = REFRESH * sum(t - fast for t in others if math.isfinite(t))
    steps = extra / fast / PROBE_SHARE if 0 < fast < math.inf else 0.0
    return int(min(HOLD_MAX, max(HOLD_STEPS, steps)))


def _estimate(old: float, sample: float, probing: bool, probe: bool) -> float:
    """A path's or config's estimate after `sample`: the first sample; while probing (or
    trying a mix) the fastest (other work only slows); a probe's fresh sample; else the
    running estimate."""
    if math.isnan(old) or (probe and not probing):
        return sample
    if probing:
        return min(old, sample)
    return (1 - ALPHA) * old + ALPHA * sample




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
