"""One rank of `inceptionn bench train` (a process of its own, `inceptionn bench train
--worker`): trains each method for the steps asked and prints its figures as JSON."""

from __future__ import annotations

import time
from pathlib import Path

from .train_methods import DECIDE_STEPS, register

__all__ = ["build_model", "worker"]


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


def _tx_bytes(ifname):
    """Bytes this namespace's interface has sent (/proc/net/dev is per namespace; /sys is
    the one mounted, the root namespace's, under nsenter)."""
    for line in Path("/proc/net/dev").read_text().splitlines()[2:]:
        name, data = line.split(":", 1)
        if name.strip() == ifname:
            return int(data.split()[8])
    raise RuntimeError(f"no interface {ifname} in this namespace")


def worker(args) -> dict:
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
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
    out = {}
    for method in args.methods:
        # PowerSGD over gloo on CPU stalls at its first compressed step when the model
        # spans several buckets (measured here, torch 2.13): one bucket for it.
        net = DDP(build_model(args.model),
                  bucket_cap_mb=64 if method.startswith("powersgd") else 25)
        times, state = register(net, method, args.decide)
        # The same update with either reduction: the mean's gradients are `batch` times
        # smaller, its learning rate `batch` times larger.
        lr = args.lr / args.batch if args.reduction == "sum" else args.lr
        opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9)
        gen = torch.Generator().manual_seed(rank)
        # A deciding hook (decide="auto") probes its paths, whole steps each, before its
        # first decision (decide.py): timed from the step after it.
        warmup = args.warmup + (DECIDE_STEPS if state is not None
                                and state.decide == "auto" else 0)
        steps = args.steps + warmup
        step_t, hook_t = [], []
        tx0 = None
        for s in range(steps):
            if s == warmup:
                dist.barrier()
                tx0 = _tx_bytes(args.ifname)
            idx = torch.randint(0, xtr.shape[0], (args.batch,), generator=gen)
            t0 = time.perf_counter()
            times.clear()
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(xtr[idx]), ytr[idx],
                                                     reduction=args.reduction)
            loss.backward()
            opt.step()
            if s >= warmup:
                step_t.append(time.perf_counter() - t0)
                hook_t.append(sum(times))
        dist.barrier()
        tx = _tx_bytes(args.ifname) - tx0
        with torch.no_grad():
            acc = (net(xte).argmax(1) == yte).float().mean().item()
        paths: dict = {}
        config: dict | None = None
        if state is not None:
            # what decided it: the slowest rank's step times per config
            sched = state.schedule if state.decide == "auto" else None
            config = sched and {"config": sched["config"], "agreed": sched["agreed"]}
            for d in state.decisions:       # each bucket's decided path, values counted
                if d["agreed"]:
                    paths[d["path"]] = paths.get(d["path"], 0) + d["values"]
            state.close()
        out[method] = {"step_s": float(np.median(step_t)), "hook_s": float(np.median(hook_t)),
                       "tx_bytes_per_step": tx / args.steps, "accuracy": acc,
                       "params": sum(p.numel() for p in net.parameters()), "paths": paths,
                       "config": config}
        del net
    dist.destroy_process_group()
    return out
