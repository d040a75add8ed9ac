"""What the INCEPTIONN hook costs on its plain paths against gloo's own all-reduce: P
ranks (two by default) on loopback (no rate limit), DDP over an MLP, the step time (forward, backward,
optimizer) of each method, the methods interleaved round by round so that a loaded
machine slows them alike; ratios against gloo's default (no hook) printed.

    python -m experiments.hook_overhead [--params-m 12] [--rounds 5] [--steps 4] [--world 2]

Methods: gloo (DDP's built-in all-reduce), torch's allreduce_hook and fp16_compress_hook,
the INCEPTIONN hook forced to its float32 all-reduce and its fp16 all-reduce (the
residual fed back), each also with the all-reduce issued from its worker thread (the
hook before hook_direct.py: a host snapshot and a hand-off).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time

METHODS = ("gloo", "torch-allreduce", "torch-fp16", "inc-allreduce", "inc-allreduce-worker",
           "inc-fp16", "inc-fp16-worker")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _model(params_m: float):
    import torch
    from torch import nn
    torch.manual_seed(0)
    width = int((params_m * 1e6 / 3) ** 0.5)     # three width x width layers
    return nn.Sequential(nn.Linear(256, width), nn.ReLU(), nn.Linear(width, width),
                         nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                         nn.Linear(width, 10))


def _rank(rank, world, port, args, out):
    import torch
    import torch.distributed as dist
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    from inceptionn.drivers.collectives import hook as hook_mod
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    pg = dist.group.WORLD
    nets, states = {}, []
    for m in METHODS:
        net = DDP(_model(args.params_m))
        if m == "torch-allreduce":
            net.register_comm_hook(pg, default_hooks.allreduce_hook)
        elif m == "torch-fp16":
            net.register_comm_hook(pg, default_hooks.fp16_compress_hook)
        elif m.startswith("inc-"):
            st = IncState(decide=m.split("-")[1], timeout_s=60)
            states.append(st)
            net.register_comm_hook(st, inc_allreduce_hook)
        nets[m] = net
    real_direct = hook_mod.issue_direct
    times: dict = {m: [] for m in METHODS}
    gen = torch.Generator().manual_seed(rank)
    for r in range(args.rounds + 1):            # round 0: warm-up
        for m, net in nets.items():
            hook_mod.issue_direct = ((lambda *a: None) if m.endswith("-worker")
                                     else real_direct)
            opt = torch.optim.SGD(net.parameters(), lr=1e-3)
            for _ in range(args.steps):
                x = torch.randn(args.batch, 256, generator=gen)
                y = torch.randint(0, 10, (args.batch,), generator=gen)
                dist.barrier()
                t0 = time.perf_counter()
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x), y).backward()
                opt.step()
                if r:
                    times[m].append(time.perf_counter() - t0)
    t = torch.tensor([statistics.median(times[m]) for m in METHODS], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)        # the slower rank sets the step
    if rank == 0:
        out.put(dict(zip(METHODS, t.tolist())))
    for st in states:
        st.close()
    dist.destroy_process_group()


def main(argv=None) -> None:
    import torch.multiprocessing as mp
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params-m", type=float, default=12.0, help="millions of parameters")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=4, help="steps per method per round")
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--world", type=int, default=2, help="ranks (P)")
    args = ap.parse_args(argv)
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank, args=(r, args.world, port, args, q))
             for r in range(args.world)]
    for p in procs:
        p.start()
    import queue
    res = None
    while res is None:      # a rank that dies ends the run, not a wait
        try:
            res = q.get(timeout=5)
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    p.kill()
                raise SystemExit("a rank failed (its traceback above)")
    for p in procs:
        p.join(60)
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"P = {args.world}, loopback, {args.params_m:g}M parameters, median step of {args.rounds} "
          f"rounds x {args.steps} steps, the slower rank; load average {load}")
    for m in METHODS:
        print(f"  {m:22s} {res[m] * 1e3:8.1f} ms   {res[m] / res['gloo']:.3f} x gloo")


if __name__ == "__main__":
    main()
