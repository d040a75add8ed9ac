"""The DDP hook's training state as data: what `IncState.state_dict()` saves and
`load_state_dict()` restores, and the two things that make a resumed run exact.

Parameters are named by `ParamKeys`: the order in which the hook first sees them (DDP's
first step, before any bucket rebuild: with DDP's defaults one bucket holding
`model.parameters()` in order, so a parameter's key is its index there). A storage
address would not survive a new process; a bucket index does not survive DDP's rebuild.

`Layout` keeps the buckets each parameter was last exchanged in. The exchange's numbers
depend on the bucket (the ring's blocks, each block's order of summation, each chunk's
scale), and a new process's DDP starts again with its first-step buckets, where the run
it resumes had rebuilt ones. So a bucket that merges buckets the hook has exchanged
before (or that a loaded state names) is exchanged as those buckets, each laid out as it
was: the resumed run computes what the uninterrupted one did, bit for bit.

The state holds no socket, thread or process group (as PyTorch's PowerSGDState): the
error-feedback residuals per parameter (torch tensors, so `torch.load(weights_only=True)`
reads it), the compressors' step per parameter, the bucket layout, the decisions between
the ring, the plain all-reduce and fp16 (decide.py: the schedule in steps, the config,
the measured times per step and per bucket), the counters, the settings, the world size
and the rank. A resumed run continues the saved schedule; a decision is
taken from times measured as the run goes, so two runs (or a run and its resumption)
give the same numbers bit for bit where they take the same paths: always with
a forced path (`decide="ring"`, `"allreduce"`, `"fp16"`). Loading it where the settings, the world size,
the rank or the parameters differ is refused with an error that names the difference.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np

from .compressed import step as compressed_step

__all__ = ["ParamKeys", "Layout", "BucketStates", "FORMAT", "check_loadable", "save", "load"]

FORMAT = 1          # the state_dict's version: a later change of its meaning bumps it


class ParamKeys:
    """Parameter -> its key (an int: the order of first sight), from the hook's thread."""

    def __init__(self):
        self.by_ptr: dict = {}          # (data_ptr, numel) -> key
        self.sizes: list[int] = []      # key -> numel
        self.expected: list[int] | None = None   # from a loaded state
        self._lock = threading.Lock()

    def of(self, params) -> list[tuple[int, int]]:
        """[(key, numel)] of a bucket's parameters; new ones are numbered in order."""
        out = []
        with self._lock:
            for p in params:
                n = p.numel()
                key = self.by_ptr.get((p.data_ptr(), n))
                if key is None:
                    key = len(self.sizes)
                    exp = self.expected
                    if exp is not None and (key >= len(exp) or exp[key] != n):
                        want = "none" if key >= len(exp) else f"{exp[key]} values"
                        raise ValueError(
                            f"the loaded hook state does not fit this model: parameter {key} "
                            f"(in the order DDP's first buckets hold them) has {n} values, the "
                            f"state {want}; load it into the same model with the same DDP "
                            "settings")
                    self.by_ptr[(p.data_ptr(), n)] = key
                    self.sizes.append(n)
                out.append((key, n))
        return out

    def known(self) -> list[int]:
        """The sizes by key: those seen, or those a loaded state names (if more)."""
        exp = self.expected or []
        return list(self.sizes) if len(self.sizes) >= len(exp) else list(exp)


class Layout:
    """The bucket each parameter was last exchanged in, as ((key, n), ...)."""

    def __init__(self):
        self.group_of: dict[int, tuple] = {}

    def plan(self, params) -> list[tuple] | None:
        """The buckets to exchange `params` as, where it merges two or more known ones
        (all of its parameters, and only them); else None, and `params` becomes the
        bucket of each of its parameters."""
        params = tuple(params)
        groups: list[tuple] = []
        for key, _ in params:
            g = self.group_of.get(key)
            if g is None:
                groups = []
                break
            if g not in groups:
                groups.append(g)
        if len(groups) >= 2 and sorted(p for g in groups for p in g) == sorted(params):
            return groups
        for key, _ in params:
            self.group_of[key] = params
        return None

    def buckets(self) -> list[list[int]]:
        """Every known bucket once, as its parameters' keys (for the state)."""
        seen, out = set(), []
        for g in self.group_of.values():
            if g not in seen:
                seen.add(g)
                out.append([k for k, _ in g])
        return out

    def load(self, buckets, sizes) -> None:
        self.group_of = {}
        for b in buckets:
            g = tuple((int(k), int(sizes[k])) for k in b)
            for key, _ in g:
                self.group_of[key] = g


class BucketStates:
    """A compressor's state per bucket, keyed by the bucket's parameters (not by
    bucket.index(): DDP rebuilds its buckets after the first step, and the same index then
    names other parameters). Every bucket's state shares the worker's one Memory, keyed
    by parameter, so a rebuilt bucket finds its parameters' residuals wherever they were;
    its step continues from the buckets its parameters came from (seeds and leaders
    follow the step on every rank)."""

    def __init__(self, worker):
        self.worker = worker
        self.entries: dict = {}      # key -> [comp, State]
        self.owner: dict = {}        # param -> key of the entry it was last exchanged in

    def step(self, arr, params):
        w, st = self.worker, self.worker.st
        pg, rank, world = w.group()
        key = tuple(params)
        if key not in self.entries:
            self._new(key, params, arr.size, rank, world)
        entry = self.entries[key]
        comp, cstate = entry
        total, cstate, sent = compressed_step(comp, arr, cstate, pg, ring=w.collective,
                                              timeout=st.timeout)
        entry[1] = cstate
        w.bytes_sent += sent
        return np.ascontiguousarray(total, np.float32)

    def _new(self, key, params, size, rank, world):
        comp = self.worker.st.compressor([n for _, n in params])
        cstate = comp.init(size, rank=rank, world=world, seed=self.worker.st.seed,
                           memory=self.worker.memory, layout=params)
        old = [self.entries[self.owner[p]][1].step for p, _ in params if p in self.owner]
        old += [self.worker.loaded_steps[p] for p, _ in params
                if p not in self.owner and p in self.worker.loaded_steps]
        if old:
            cstate = replace(cstate, step=max(old))
        self.entries[key] = [comp, cstate]
        for p, _ in params:
            self.owner[p] = key
        held = set(self.owner.values())
        for k in [k for k in self.entries if k not in held]:
            del self.entries[k]


def exchange_as(arr: np.ndarray, params, groups, exchange) -> np.ndarray:
    """Exchange the bucket `arr` (laid out as `params`) as `groups`: each gathered into
    its own buffer in its order, exchanged, and put back where its values came from."""
    where, off = {}, 0
    for key, n in params:
        where[key] = (off, n)
        off += n
    for g in groups:
        sub = np.concatenate([arr[where[k][0]:where[k][0] + n] for k, n in g])
        res = exchange(sub, list(g))
        o = 0
        for k, n in g:
            arr[where[k][0]:where[k][0] + n] = res[o:o + n]
            o += n
    return arr


def check_loadable(sd, settings: dict, world: int | None, rank: int | None) -> None:
    """Raise ValueError naming what differs between a saved state and this hook."""
    if not isinstance(sd, dict) or sd.get("format") != FORMAT:
        got = sd.get("format") if isinstance(sd, dict) else type(sd).__name__
        raise ValueError(f"not an INCEPTIONN hook state of format {FORMAT} (got {got!r})")
    saved = sd["settings"]
    diff = [f"{k}: saved {saved.get(k, '<unset>')!r}, now {settings.get(k, '<unset>')!r}"
            for k in sorted(set(saved) | set(settings)) if saved.get(k) != settings.get(k)]
    if diff:
        raise ValueError("the hook state was saved with other settings: " + "; ".join(diff))
    if world is not None and sd["world"] is not None and sd["world"] != world:
        raise ValueError(f"the hook state was saved by a job of {sd['world']} ranks, this one "
                         f"has {world}: the error-feedback memory is per rank")
    if rank is not None and sd["rank"] is not None and sd["rank"] != rank:
        raise ValueError(f"the hook state is rank {sd['rank']}'s, loaded on rank {rank}: "
                         "each rank loads its own")


def save(worker) -> dict:
    """The worker's state (see the module's docstring); between steps only."""
    import torch
    q = getattr(worker, "_q", None)
    if q is not None:
        # Backward returns once every bucket's Future is set; the worker counts the
        # bucket done just after. A step still under way is waited for, within reason.
        with q.all_tasks_done:
            if not q.all_tasks_done.wait_for(lambda: not q.unfinished_tasks,
                                             worker.st.timeout):
                raise RuntimeError("the hook state is taken between steps: a bucket's "
                                   "exchange is still running (call state_dict after "
                                   "backward returns)")
    st = worker.st
    world, rank = worker.world, worker.rank
    if world is None:
        import torch.distributed as dist
        if dist.is_initialized():
            _, rank, world = worker.group()
    mem = worker.memory
    steps: dict[int, int] = {}
    for key, (_, cstate) in worker.buckets.entries.items():
        for k, _ in key:
            steps[int(k)] = int(cstate.step)
    for k, s in worker.loaded_steps.items():
        steps.setdefault(k, s)
    return {"format": FORMAT, "settings": st.settings(), "world": world, "rank": rank,
            "params": worker.keys.known(), "buckets": worker.layout.buckets(),
            "memory": {} if mem is None else
            {int(k): torch.from_numpy(r.copy()) for k, r in sorted(mem.residual.items())},
            "steps": steps, "calls": worker.calls, "bytes_sent": worker.bytes_sent,
            "decisions": worker.decisions.state()}


def load(worker, sd) -> None:
    """Restore a saved state into a worker that has not exchanged anything yet."""
    world = rank = None
    import torch.distributed as dist
    if dist.is_initialized():
        _, rank, world = worker.group()
    check_loadable(sd, worker.st.settings(), world, rank)
    if worker.keys.sizes:
        raise RuntimeError("load the hook state before the first step (this hook has "
                           "exchanged buckets already)")
    sizes = [int(n) for n in sd["params"]]
    mem = worker.memory
    residual = {}
    for k, r in sd["memory"].items():
        k = int(k)
        arr = np.array(r.numpy() if hasattr(r, "numpy") else r, np.float32).reshape(-1)
        if not 0 <= k < len(sizes) or arr.size != sizes[k]:
            raise ValueError(f"the hook state's residual {k} has {arr.size} values, its "
                             "parameter list says otherwise: the state is damaged")
        residual[k] = arr
    if residual and mem is None:
        raise ValueError("the hook state holds error-feedback memory; this hook keeps none")
    worker.keys.expected = sizes
    worker.layout.load(sd["buckets"], sizes)
    if mem is not None:
        mem.residual = residual
    worker.loaded_steps = {int(k): int(s) for k, s in sd["steps"].items()}
    worker.decisions.load(sd.get("decisions", []), sizes)
    worker.calls, worker.bytes_sent = int(sd["calls"]), int(sd["bytes_sent"])
    worker.saved_world, worker.saved_rank = sd["world"], sd["rank"]
