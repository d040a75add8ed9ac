"""Simulated data-parallel training with exact wire bytes: P workers, one model.

Every worker holds the same weights (they apply the same aggregated update), so one
PyTorch model serves all: per step each worker computes its gradient on its own shard's
minibatch, the compressor and its collective (golden.compressors.collectives.run) turn
the P gradients into the sum every rank receives, and the mean updates the model. The
bytes each worker sent are the collective's exact count. Losses are summed over the
batch (the learning rate divided by the batch): the NIC's error bound is absolute, and
mean-reduced gradients would be batch-times smaller.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from inceptionn import golden
from inceptionn.golden.compressors import collectives

__all__ = ["Data", "dataset", "model", "Run", "train"]


@dataclass
class Data:
    name: str
    xtr: torch.Tensor
    ytr: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor
    shape: tuple      # one input's shape


@functools.lru_cache(maxsize=None)
def dataset(name: str) -> Data:
    """'digits' (scikit-learn's 8x8) or 'mnist1d' (generated locally, no download)."""
    if name == "digits":
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split
        d = load_digits()
        x = (d.data / 16.0).astype(np.float32)
        xtr, xte, ytr, yte = train_test_split(x, d.target, test_size=0.25, random_state=0,
                                              stratify=d.target)
        shape = (1, 8, 8)
    elif name == "mnist1d":
        from mnist1d import data as m1d
        args = m1d.get_dataset_args()
        args.num_samples = 5000
        d = m1d.make_dataset(args)
        xtr, xte = d["x"].astype(np.float32), d["x_test"].astype(np.float32)
        ytr, yte = d["y"], d["y_test"]
        shape = (1, xtr.shape[1])
    else:
        raise ValueError(f"unknown dataset {name!r}")
    t = torch.from_numpy
    return Data(name, t(xtr), t(np.asarray(ytr)).long(), t(xte), t(np.asarray(yte)).long(), shape)


def model(name: str, data: Data) -> nn.Module:
    """'hdc': the paper's 5-layer MLP (500 units); 'lenet': a small LeNet-like CNN."""
    n_in = int(np.prod(data.shape))
    if name == "hdc":
        layers, width = [nn.Flatten()], n_in
        for _ in range(4):
            layers += [nn.Linear(width, 500), nn.ReLU()]
            width = 500
        return nn.Sequential(*layers, nn.Linear(width, 10))
    if name == "lenet":
        if len(data.shape) == 3:
            conv = [nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 16, 3, padding=1),
                    nn.ReLU(), nn.MaxPool2d(2)]
            flat = 16 * (data.shape[1] // 2) * (data.shape[2] // 2)
        else:
            conv = [nn.Conv1d(1, 6, 5, padding=2), nn.ReLU(), nn.Conv1d(6, 16, 5, padding=2),
                    nn.ReLU(), nn.MaxPool1d(2)]
            flat = 16 * (data.shape[1] // 2)
        return nn.Sequential(nn.Unflatten(1, data.shape), *conv, nn.Flatten(),
                             nn.Linear(flat, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                             nn.Linear(84, 10))
    raise ValueError(f"unknown model {name!r}")


@dataclass
class Run:
    accuracy: float
    bytes_per_step: float           # mean over steps and workers of bytes sent
    dense_bytes: int                # float32 bytes of one gradient
    shares: dict = field(default_factory=dict)   # k -> code bits -> share of worker 0's grads
    losses: list = field(default_factory=list)

    @property
    def ratio(self) -> float:
        return self.dense_bytes / self.bytes_per_step if self.bytes_per_step else float("inf")


def _flat_grad(net) -> np.ndarray:
    return torch.cat([p.grad.reshape(-1) for p in net.parameters()]).numpy().astype(np.float32)


def train(model_name: str, data_name: str, make_comp, *, workers: int = 4, steps: int = 150,
          batch: int = 32, lr: float = 0.05, momentum: float = 0.9, seed: int = 0,
          band_ks=(), progress=None) -> Run:
    """Train with `make_comp(layer_sizes)` (a golden.compressors Compressor) on `workers`
    simulated workers; test accuracy at the end, bytes per worker per step."""
    torch.manual_seed(seed)
    torch.set_num_threads(1)
    data = dataset(data_name)
    net = model(model_name, data)
    sizes = [p.numel() for p in net.parameters()]
    d = int(sum(sizes))
    comp = make_comp(sizes)
    states = [comp.init(d, rank=r, world=workers, seed=seed) for r in range(workers)]
    opt = torch.optim.SGD(net.parameters(), lr=lr / batch, momentum=momentum)
    gen = torch.Generator().manual_seed(seed)
    shards = [torch.arange(r, data.xtr.shape[0], workers) for r in range(workers)]
    sent, shares, losses = 0, [], []
    for step in range(steps):
        grads = []
        for r in range(workers):
            idx = shards[r][torch.randint(0, shards[r].numel(), (batch,), generator=gen)]
            net.zero_grad()
            loss = nn.functional.cross_entropy(net(data.xtr[idx]), data.ytr[idx], reduction="sum")
            loss.backward()
            grads.append(_flat_grad(net))
            losses.append(loss.item() / batch)
        if band_ks and step % max(1, steps // 5) == 0:
            shares.append({k: golden.band_stats(grads[0], k).share for k in band_ks})
        ex = collectives.run(comp, grads, states)
        states = ex.states
        sent += sum(ex.sent)
        mean = torch.from_numpy(ex.results[0] / np.float32(workers))
        off = 0
        for p in net.parameters():
            p.grad = mean[off:off + p.numel()].view_as(p).clone()
            off += p.numel()
        opt.step()
        if progress:
            progress()
    with torch.no_grad():
        acc = (net(data.xte).argmax(1) == data.yte).float().mean().item()
    mean_shares = {k: {b: float(np.mean([s[k][b] for s in shares])) for b in shares[0][k]}
                   for k in band_ks}
    return Run(acc, sent / steps / workers, 4 * d, mean_shares, losses)
