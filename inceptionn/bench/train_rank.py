"""One rank of `inceptionn bench train` (a process of its own, `inceptionn bench train
--worker`): trains each method for the steps asked and prints its figures as JSON.

How the methods share the run (`--block`): every method is built and warmed up first;
then their timed steps go in blocks of `block`, the methods' blocks one after another,
the order rotating each round, and each block led by one untimed step. Why: run one
whole method after another, two methods on the same path differed by up to 15% (the
shared cores' load drifts over a run); interleaved one step at a time they agreed
within 2-4%, but the ring's steps slowed by 14% (likely its sockets and threads, idle
for seconds between its steps: docs/benchmarks.md). The untimed lead-in step takes such
a restart; the blocks still meet the same load. `--block 0`: one method after another,
each built, warmed up, timed and freed in turn (the accuracy comparison's way)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from .train_methods import DECIDE_STEPS, register

__all__ = ["build_model", "worker", "rounds"]


def build_model(name="mlp"):
    """The benchmark's model: the 12.2M-parameter MLP, or the study's CNN ("cnn")."""
    import torch
    from torch import nn
    torch.manual_seed(0)
    if name == "cnn":       # the study's LeNet-like CNN (study/models.py), He init
        from ..study.models import build, dataset
        return build("lenet", dataset("digits"), seed=0)
    return nn.Sequential(nn.Linear(64, 3000), nn.ReLU(), nn.Linear(3000, 3000), nn.ReLU(),
                         nn.Linear(3000, 1000), nn.ReLU(), nn.Linear(1000, 10))


def rounds(steps: int, block: int, methods: list) -> list[list[tuple[str, int]]]:
    """The timed steps' plan: per round, (method, timed steps) in the round's order. The
    order rotates by one each round; the last round may be shorter. block 0 (or one
    method): a single round, every method's steps in one go."""
    if block < 0 or steps < 1:
        raise ValueError(f"block must be >= 0 and steps >= 1, got {block}, {steps}")
    if block == 0 or len(methods) == 1:
        return [[(m, steps) for m in methods]]
    plan, i = [], 0
    while steps > 0:
        n = min(block, steps)
        k = i % len(methods)
        plan.append([(m, n) for m in methods[k:] + methods[:k]])
        steps -= n
        i += 1
    return plan


def _tx_bytes(ifname):
    """Bytes this namespace's interface has sent (/proc/net/dev is per namespace; /sys is
    the one mounted, the root namespace's, under nsenter)."""
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, data = line.split(":", 1)
        if name.strip() == ifname:
            return int(data.split()[8])
    raise RuntimeError(f"no interface {ifname} in this namespace")


class _Run:
    """One method's model, optimizer, batch generator and figures on this rank."""

    def __init__(self, method, args, rank):
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        self.method = method
        # PowerSGD over gloo on CPU stalls at its first compressed step when the model
        # spans several buckets (measured here, torch 2.13): one bucket for it.
        self.net = DDP(build_model(args.model),
                       bucket_cap_mb=64 if method.startswith("powersgd") else 25)
        self.times, self.state = register(self.net, method, args.decide)
        # The same update with either reduction: the mean's gradients are `batch` times
        # smaller, its learning rate `batch` times larger.
        lr = args.lr / args.batch if args.reduction == "sum" else args.lr
        self.opt = torch.optim.SGD(self.net.parameters(), lr=lr, momentum=0.9)
        self.gen = torch.Generator().manual_seed(rank)
        self.step_t: list[float] = []
        self.hook_t: list[float] = []
        self.tx = 0
        self.timed = 0
        self.cpu = [0.0, 0.0]       # this process's user and system seconds, timed steps

    @property
    def deciding(self) -> bool:
        return self.state is not None and self.state.decide == "auto"

    def step(self, xtr, ytr, args) -> float:
        """One training step; its wall time."""
        import torch
        idx = torch.randint(0, xtr.shape[0], (args.batch,), generator=self.gen)
        t0 = time.perf_counter()
        self.times.clear()
        self.opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(self.net(xtr[idx]), ytr[idx],
                                                 reduction=args.reduction)
        loss.backward()
        self.opt.step()
        return time.perf_counter() - t0

    def warm_up(self, xtr, ytr, args):
        # A deciding hook (decide="auto") probes its paths, whole steps each, before its
        # first decision (decide.py): timed from the step after it.
        for _ in range(args.warmup + (DECIDE_STEPS if self.deciding else 0)):
            self.step(xtr, ytr, args)

    def block(self, n, lead, xtr, ytr, args):
        """n timed steps, after an untimed one if `lead`; the bytes this interface sent
        in the timed ones, counted between barriers: once every rank has ended a step,
        every byte of it has arrived (each is needed by some rank's result)."""
        import torch.distributed as dist
        if self.state is not None:      # its clock would count the other methods' steps
            self.state.pause_clock()
        if lead:
            self.step(xtr, ytr, args)
        dist.barrier()
        tx0, cpu0 = _tx_bytes(args.ifname), os.times()
        for _ in range(n):
            self.step_t.append(self.step(xtr, ytr, args))
            self.hook_t.append(sum(self.times))
        cpu1 = os.times()           # every thread's, before the barrier's wait
        dist.barrier()
        self.tx += _tx_bytes(args.ifname) - tx0
        self.cpu[0] += cpu1.user - cpu0.user
        self.cpu[1] += cpu1.system - cpu0.system
        self.timed += n

    def result(self, xte, yte) -> dict:
        import numpy as np
        import torch
        with torch.no_grad():
            acc = (self.net(xte).argmax(1) == yte).float().mean().item()
        paths: dict = {}
        config: dict | None = None
        state = self.state
        if state is not None:
            # what decided it: the slowest rank's step times per config
            sched = state.schedule if state.decide == "auto" else None
            config = sched and {"config": sched["config"], "agreed": sched["agreed"]}
            for d in state.decisions:       # each bucket's decided path, values counted
                if d["agreed"]:
                    paths[d["path"]] = paths.get(d["path"], 0) + d["values"]
            state.close()
        return {"step_s": float(np.median(self.step_t)),
                "hook_s": float(np.median(self.hook_t)),
                "tx_bytes_per_step": self.tx / self.timed, "accuracy": acc,
                "cpu_user_s_per_step": self.cpu[0] / self.timed,
                "cpu_sys_s_per_step": self.cpu[1] / self.timed,
                "params": sum(p.numel() for p in self.net.parameters()), "paths": paths,
                "config": config}


def worker(args) -> dict:
    import torch
    import torch.distributed as dist
    from .data import digits
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.model == "cnn":
        from ..study.models import dataset
        d = dataset("digits")
        xtr, ytr, xte, yte = d.xtr, d.ytr, d.xte, d.yte
    else:
        xtr, ytr, xte, yte = digits(0)
    shard = torch.arange(rank, xtr.shape[0], world)
    xtr, ytr = xtr[shard], ytr[shard]
    plan = rounds(args.steps, args.block, list(args.methods))
    out = {}
    if len(plan) == 1:          # one method after another, each freed when done
        for method, n in plan[0]:
            r = _Run(method, args, rank)
            r.warm_up(xtr, ytr, args)
            r.block(n, False, xtr, ytr, args)
            out[method] = r.result(xte, yte)
            del r
    else:
        runs = {m: _Run(m, args, rank) for m in args.methods}
        for r in runs.values():
            r.warm_up(xtr, ytr, args)
        for order in plan:
            for method, n in order:
                runs[method].block(n, True, xtr, ytr, args)
        out = {m: r.result(xte, yte) for m, r in runs.items()}
        del runs
    dist.destroy_process_group()
    return out
