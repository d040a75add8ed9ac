"""Train with PyTorch DDP through the INCEPTIONN ring.

    torchrun --nproc-per-node 4 examples/train_ddp.py      # bounded, 2^-10 of the scale, EF
    torchrun --nproc-per-node 4 examples/train_ddp.py --bound absolute  # 2^-10 whatever the scale
    torchrun --nproc-per-node 4 examples/train_ddp.py --codec paper --error-bound 2^-10
    torchrun --nproc-per-node 4 examples/train_ddp.py --hook gloo       # DDP's own all-reduce
    torchrun --nnodes 2 --node-rank 0 --master-addr 10.0.0.1 ... examples/train_ddp.py --wire nic

    torchrun --nproc-per-node 4 examples/train_ddp.py --hook terngrad      # a companion paper

Models: the paper's HDC network (64-500-500-500-500-10, `--model hdc`) or a small CNN
(`--model cnn`) on scikit-learn's 8x8 digits (no download). Each rank trains on its own
shard; every rank prints nothing but rank 0, which prints the test accuracy.
`--check-identical` compares a hash of every rank's weights after every step.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from inceptionn.bench.data import digits


def model(name: str) -> nn.Module:
    if name == "hdc":
        layers, width = [], 64
        for _ in range(4):
            layers += [nn.Linear(width, 500), nn.ReLU()]
            width = 500
        return nn.Sequential(*layers, nn.Linear(width, 10))
    if name == "cnn":
        return nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
                             nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                             nn.Flatten(), nn.Linear(32 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
    raise ValueError(f"unknown model {name!r} (hdc or cnn)")


def weights_hash(m: nn.Module) -> str:
    h = hashlib.sha256()
    for p in m.parameters():
        h.update(p.detach().cpu().numpy().tobytes())
    return h.hexdigest()


def train(args, store=None) -> dict:
    """One rank's training run in an initialized process group; rank 0 gets the result."""
    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)                  # the same initial weights everywhere
    torch.set_num_threads(1)
    xtr, ytr, xte, yte = digits(args.seed)
    shard = torch.arange(rank, xtr.shape[0], world)
    xtr, ytr = xtr[shard], ytr[shard]
    net = DDP(model(args.model))
    state = None
    if args.hook != "gloo":
        density = args.density if args.hook in ("topk", "gtopk", "randomk", "blockk",
                                                "scalecom") else None
        state = IncState(mode=args.mode, method=args.hook, codec=args.codec,
                         error_bound=args.error_bound, wire=args.wire, density=density,
                         seed=args.seed, store=store, bound=args.bound, decide=args.decide)
        net.register_comm_hook(state, inc_allreduce_hook)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr / args.batch, momentum=0.9)
    gen = torch.Generator().manual_seed(args.seed + rank)
    identical = True
    for step in range(args.steps):
        idx = torch.randint(0, xtr.shape[0], (args.batch,), generator=gen)
        opt.zero_grad()
        # Summed over the batch, not averaged: the NIC's error bound is absolute (2^-k),
        # and averaged gradients are `batch` times smaller, mostly under it (the
        # learning rate is divided by the batch instead: the same update).
        loss = nn.functional.cross_entropy(net(xtr[idx]), ytr[idx], reduction="sum")
        loss.backward()
        opt.step()
        if args.check_identical:
            hashes = [None] * world
            dist.all_gather_object(hashes, weights_hash(net.module))
            identical &= len(set(hashes)) == 1
    with torch.no_grad():
        acc = (net(xte).argmax(1) == yte).float().mean().item()
    if state is not None:
        state.close()
    return {"accuracy": acc, "identical": identical, "loss": loss.item() / args.batch,
            "weights": weights_hash(net.module)}


def parser():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", choices=("hdc", "cnn"), default="hdc")
    from inceptionn.ddp_hook import METHODS
    ap.add_argument("--hook", choices=("gloo",) + METHODS, default="inceptionn",
                    help="inceptionn: the ring with the NIC's codec; none: the ring alone; "
                         "gloo: DDP's own all-reduce; or a companion paper's compressor")
    ap.add_argument("--density", type=float, default=0.01,
                    help="values kept by the sparsifiers (topk, gtopk, randomk, blockk, scalecom)")
    ap.add_argument("--mode", choices=("inc", "wa"), default="inc")
    ap.add_argument("--error-bound", default="2^-10", help="the codec's error bound 2^-k")
    ap.add_argument("--codec", choices=("bounded", "paper"), default="bounded")
    ap.add_argument("--bound", choices=("scaled", "absolute"), default=None,
                    help="scaled: 2^-k of each chunk's own scale, with error feedback (the "
                         "default with the bounded codec on the software wire); absolute: "
                         "2^-k whatever the scale (the paper's)")
    ap.add_argument("--wire", choices=("software", "nic", "emulate"), default="software",
                    help="software: the codec's bytes on plain sockets (default); nic: "
                         "float32 on tagged sockets for an INCEPTIONN NIC on the path; "
                         "emulate: float32, the roundtrip applied on receipt")
    ap.add_argument("--decide", choices=("auto", "ring", "allreduce", "fp16"), default=None,
                    help="per bucket: the coded ring, the process group's all-reduce or "
                         "its fp16 all-reduce, "
                         "whichever is measured faster (auto: the default on the software "
                         "wire), or always one")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=32, help="per rank")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--check-identical", action="store_true")
    return ap


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    if "RANK" not in os.environ:
        print("run me with torchrun, e.g. torchrun --nproc-per-node 4 examples/train_ddp.py",
              file=sys.stderr)
        return 2
    dist.init_process_group("gloo")
    try:
        res = train(args)
        if dist.get_rank() == 0:
            print(f"{args.model} x {dist.get_world_size()} ranks, hook {args.hook} "
                  f"({args.mode}, {args.codec} {args.error_bound}, {args.wire}): test accuracy {res['accuracy']:.1%}, "
                  f"final loss {res['loss']:.4f}"
                  + (f", identical weights every step: {res['identical']}"
                     if args.check_identical else ""))
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
