"""The study's data sets and models, all built locally (no download).

Data sets: scikit-learn's 8x8 digits, split as the HDC driver splits them (seed 0, 20%
test), and mnist1d, whose generator makes the data on this machine (10,000 samples:
8,000 to train, 2,000 to test). Models: the paper's HDC network (five fully connected
layers, 500 hidden units, He initialisation as in the driver) and a small LeNet-like
CNN (two convolutions, a pool, three fully connected layers), 2-D for digits, 1-D for
mnist1d.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

__all__ = ["Data", "dataset", "build", "layer_sizes", "MNIST1D_SAMPLES"]

MNIST1D_SAMPLES = 10_000


@dataclass(frozen=True)
class Data:
    name: str
    xtr: torch.Tensor
    ytr: torch.Tensor
    xte: torch.Tensor
    yte: torch.Tensor
    shape: tuple      # one input's shape (channels, length[, width])


@functools.lru_cache(maxsize=None)
def dataset(name: str) -> Data:
    """'digits' (the HDC driver's split of scikit-learn's digits) or 'mnist1d'."""
    if name == "digits":
        from inceptionn.gradients import load_digits_split
        d = load_digits_split(seed=0, test_fraction=0.2)
        xtr, ytr, xte, yte, shape = d.x_train, d.y_train, d.x_test, d.y_test, (1, 8, 8)
    elif name == "mnist1d":
        from mnist1d.data import get_dataset_args, make_dataset
        args = get_dataset_args()
        args.num_samples = MNIST1D_SAMPLES
        state = np.random.get_state()   # the generator seeds NumPy's global state
        try:
            d = make_dataset(args)
        finally:
            np.random.set_state(state)
        xtr, ytr, xte, yte = d["x"], d["y"], d["x_test"], d["y_test"]
        shape = (1, int(xtr.shape[1]))
    else:
        raise ValueError(f"unknown data set {name!r}")

    def t(a, dtype):
        return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)
    return Data(name, t(xtr, torch.float32), t(ytr, torch.long), t(xte, torch.float32),
                t(yte, torch.long), shape)


def _hdc(n_in: int) -> nn.Module:
    from inceptionn.gradients import HDC_LAYERS
    widths = (n_in,) + tuple(HDC_LAYERS[1:])
    layers: list[nn.Module] = [nn.Flatten()]
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        lin = nn.Linear(a, b)
        nn.init.normal_(lin.weight, 0.0, float(np.sqrt(2.0 / a)))   # He, as the driver
        nn.init.zeros_(lin.bias)
        layers.append(lin)
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def _lenet(shape: tuple) -> nn.Module:
    if len(shape) == 3:   # 1 x 8 x 8
        conv = [nn.Conv2d(1, 6, 3, padding=1), nn.ReLU(), nn.Conv2d(6, 16, 3, padding=1),
                nn.ReLU(), nn.MaxPool2d(2)]
        flat = 16 * (shape[1] // 2) * (shape[2] // 2)
    else:                 # 1 x 40
        conv = [nn.Conv1d(1, 6, 5, padding=2), nn.ReLU(), nn.Conv1d(6, 16, 5, padding=2),
                nn.ReLU(), nn.MaxPool1d(2)]
        flat = 16 * (shape[1] // 2)
    return nn.Sequential(nn.Unflatten(1, shape), *conv, nn.Flatten(), nn.Linear(flat, 120),
                         nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))


def _he(net: nn.Module) -> nn.Module:
    """He (fan-in) normal weights and zero biases for every layer, as the HDC driver."""
    for m in net.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
            nn.init.zeros_(m.bias)
    return net


def build(model: str, data: Data, seed: int, init: str = "he") -> nn.Module:
    """'hdc' or 'lenet' for `data`, initialised from `seed`: 'he' (both models, as the
    HDC driver) or 'torch' (PyTorch's default, for the LeNet-like model)."""
    torch.manual_seed(seed)
    n_in = int(np.prod(data.shape))
    if model == "hdc":
        return _hdc(n_in)
    if model == "lenet":
        net = _lenet(data.shape)
        return _he(net) if init == "he" else net
    raise ValueError(f"unknown model {model!r}")


def layer_sizes(net: nn.Module) -> list[int]:
    """Sizes of the parameter tensors in the order of the flattened gradient."""
    return [p.numel() for p in net.parameters()]
