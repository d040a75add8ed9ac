"""Where the project's real gradients come from: the paper's HDC network (Section VII-A): five fully connected layers with 500 hidden
units, trained in plain NumPy so that the demo has *real* gradients to push through the
NIC engines.

The paper trains on MNIST (784 inputs); this module uses scikit-learn's bundled 8x8
digits (64 inputs, no download), so the shape is 64-500-500-500-500-10. Training follows
Table I where it can: batch 25, momentum 0.9, weight decay 5e-5; the learning rate is
smaller than the paper's 0.1 because the deep ReLU stack is trained from scratch in a few
hundred steps, with no warm-up.

`real_gradients()` trains it once and caches the captures (build/cache/): the demo,
the benchmarks and the tests take their gradients from it.

Everything is float32 and seeded, so two runs with the same arguments give the same
gradients bit for bit on the same machine.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "HDC_LAYERS",
    "Dataset",
    "HDCNet",
    "TrainResult",
    "load_digits_split",
    "capture_steps",
    "train",
    "Gradients",
    "real_gradients",
    "DEFAULT_CACHE",
    "DEFAULT_STEPS",
]

#: Layer widths: 8x8 pixels in, four hidden layers of 500, ten digits out (5 FC layers).
HDC_LAYERS = (64, 500, 500, 500, 500, 10)


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray  # float32 [n, 64], pixels scaled to 0..1
    y_train: np.ndarray  # int64 [n]
    x_test: np.ndarray
    y_test: np.ndarray


def load_digits_split(seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """scikit-learn's digits, shuffled with `seed` and split into train/test."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    from sklearn.datasets import load_digits

    digits = load_digits()
    # 16 is the largest pixel value in this data set; 0..1 keeps the first layer tame.
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(len(y) * test_fraction))
    test, tr = order[:n_test], order[n_test:]
    return Dataset(x[tr], y[tr], x[test], y[test])


class HDCNet:
    """Fully connected ReLU network with a softmax cross-entropy head."""

    def __init__(self, layers=HDC_LAYERS, seed: int = 0):
        layers = tuple(int(n) for n in layers)
        if len(layers) < 2 or min(layers) < 1:
            raise ValueError(f"need at least an input and an output width, got {layers}")
        self.layers = layers
        rng = np.random.default_rng(seed)
        self.params: list[np.ndarray] = []
        for fan_in, fan_out in zip(layers[:-1], layers[1:]):
            # He initialisation keeps ReLU activations from dying or exploding with depth.
            w = rng.standard_normal((fan_in, fan_out)) * np.sqrt(2.0 / fan_in)
            self.params += [w.astype(np.float32), np.zeros(fan_out, np.float32)]

    @property
    def num_params(self) -> int:
        return sum(p.size for p in self.params)

    def logits(self, x: np.ndarray) -> np.ndarray:
        h = np.asarray(x, np.float32)
        n_layers = len(self.params) // 2
        for i in range(n_layers):
            h = h @ self.params[2 * i] + self.params[2 * i + 1]
            if i < n_layers - 1:
                h = np.maximum(h, 0.0)
        return h

    def accuracy(self, x: np.ndarray, y: np.ndarray) -> float:
        return float(np.mean(np.argmax(self.logits(x), axis=1) == y))

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray) -> tuple[float, list[np.ndarray]]:
        """Mean softmax cross-entropy over the batch and its gradient per parameter."""
        x = np.asarray(x, np.float32)
        n_layers = len(self.params) // 2
        acts = [x]
        h = x
        for i in range(n_layers):
            h = h @ self.params[2 * i] + self.params[2 * i + 1]
            if i < n_layers - 1:
                h = np.maximum(h, 0.0)
            acts.append(h)
        z = acts[-1] - acts[-1].max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        n = x.shape[0]
        loss = float(-np.mean(np.log(p[np.arange(n), y] + 1e-12)))
        delta = p
        delta[np.arange(n), y] -= 1.0
        delta = (delta / n).astype(np.float32)
        grads: list[np.ndarray] = [None] * len(self.params)  # type: ignore[list-item]
        for i in reversed(range(n_layers)):
            grads[2 * i] = acts[i].T @ delta
            grads[2 * i + 1] = delta.sum(axis=0)
            if i > 0:
                # ReLU passes the gradient only where the unit was active.
                delta = (delta @ self.params[2 * i].T) * (acts[i] > 0)
        return loss, [g.astype(np.float32, copy=False) for g in grads]

    @staticmethod
    def flatten(grads: list[np.ndarray]) -> np.ndarray:
        """All layers' gradients as one float32 vector (W1, b1, W2, b2, ...), as sent."""
        return np.concatenate([g.ravel() for g in grads]).astype(np.float32)


@dataclass
class TrainResult:
    net: HDCNet
    steps: int
    losses: list[float]
    acc_before: float  # test accuracy of the untrained network
    acc_after: float  # test accuracy after the last step
    #: name -> (step, flat float32 gradient of all layers at that step)
    captures: dict[str, tuple[int, np.ndarray]] = field(default_factory=dict)


def capture_steps(steps: int) -> dict[str, int]:
    """Steps at which gradients are captured: early, mid-way and late in training."""
    if steps < 3:
        raise ValueError(f"need at least 3 steps to capture early/mid/late, got {steps}")
    return {"early": 0, "mid": steps // 2, "late": steps - 1}


def train(
    steps: int = 300,
    *,
    batch: int = 25,
    lr: float = 0.01,
    momentum: float = 0.9,
    weight_decay: float = 5e-5,
    seed: int = 0,
    layers=HDC_LAYERS,
    progress=None,
) -> TrainResult:
    """Train with momentum SGD on mini-batches; capture gradients early, mid-way, late.

    `progress`, if given, is called as progress(step, loss) every 50 steps.
    """
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    want = capture_steps(steps)
    data = load_digits_split(seed)
    # One BLAS thread: the same bits on any machine (a sum split over threads is not), as
    # fast alone on these small matrices, and beside the demo's engine builds OpenBLAS's
    # spinning threads had made 300 steps take 48 s instead of 6.
    from threadpoolctl import threadpool_limits     # scikit-learn's, as load_digits is
    with threadpool_limits(1, user_api="blas"):
        return _train(steps, batch, lr, momentum, weight_decay, seed, layers, progress, want, data)


def _train(steps, batch, lr, momentum, weight_decay, seed, layers, progress, want, data):
    net = HDCNet(layers, seed)
    rng = np.random.default_rng(seed + 1)
    velocity = [np.zeros_like(p) for p in net.params]
    result = TrainResult(net, steps, [], net.accuracy(data.x_test, data.y_test), 0.0)
    order = rng.permutation(len(data.y_train))
    pos = 0
    for step in range(steps):
        if pos + batch > len(order):
            order, pos = rng.permutation(len(data.y_train)), 0
        idx = order[pos:pos + batch]
        pos += batch
        loss, grads = net.loss_and_grads(data.x_train[idx], data.y_train[idx])
        result.losses.append(loss)
        for name, at in want.items():
            if at == step:
                # The gradient a worker would put on the wire: the raw mini-batch gradient.
                result.captures[name] = (step, HDCNet.flatten(grads))
        for p, g, v in zip(net.params, grads, velocity):
            v *= np.float32(momentum)
            v -= np.float32(lr) * (g + np.float32(weight_decay) * p)
            p += v
        if progress is not None and (step % 50 == 0 or step == steps - 1):
            progress(step, loss)
    result.acc_after = net.accuracy(data.x_test, data.y_test)
    return result


# ---------------------------------------------------------------------- captures

DEFAULT_CACHE = Path("build/cache")
DEFAULT_STEPS = 300
# Bump when training changes, so stale caches are not reused (2: one BLAS thread, so the
# captures are the same bits on every machine, whatever its core count).
CACHE_VERSION = 2
_T0 = time.monotonic()


def log(msg: str, quiet: bool = False) -> None:
    """A line on stdout with the seconds since start (nothing when quiet)."""
    if not quiet:
        print(f"[{time.monotonic() - _T0:6.1f}s] {msg}", flush=True)


def progress_bar(total, desc, quiet, unit="run"):
    """A bar on stderr for the stages that take more than a few seconds."""
    from tqdm import tqdm
    return tqdm(total=total, desc=desc, unit=unit, disable=quiet, file=sys.stderr,
                leave=False, dynamic_ncols=True)


@dataclass
class Gradients:
    """The demo's real gradients: flat float32 vectors of all HDC layers."""
    captures: dict  # name -> float32 array
    steps: dict  # name -> training step of the capture
    train_steps: int
    seed: int
    acc_before: float
    acc_after: float
    losses: np.ndarray

    def all(self) -> np.ndarray:
        """Every capture, concatenated in capture order."""
        return np.concatenate(list(self.captures.values()))


def _cache_path(cache_dir, steps, seed) -> Path:
    return Path(cache_dir) / f"hdc_grads_v{CACHE_VERSION}_steps{steps}_seed{seed}.npz"


def real_gradients(steps: int = DEFAULT_STEPS, seed: int = 0, *, cache_dir=DEFAULT_CACHE,
                   refresh: bool = False, quiet: bool = True) -> Gradients:
    """Gradients of a seeded HDC training run, cached in `cache_dir` (None: no cache).

    The first call trains (a few seconds); later calls with the same steps and seed load
    the .npz. Writes are atomic, so concurrent callers never read half a file.
    """
    path = _cache_path(cache_dir, steps, seed) if cache_dir is not None else None
    if path is not None and path.exists() and not refresh:
        with np.load(path, allow_pickle=False) as z:
            names = [str(n) for n in z["names"]]
            return Gradients({n: z[f"grad_{n}"] for n in names},
                             {n: int(s) for n, s in zip(names, z["steps"])},
                             int(z["train_steps"]), int(z["seed"]), float(z["acc_before"]),
                             float(z["acc_after"]), z["losses"])
    log(f"training HDC {'-'.join(map(str, HDC_LAYERS))} for {steps} steps (seed {seed})", quiet)
    bar = progress_bar(steps, "training HDC", quiet, unit="step")

    def step(s, loss):
        bar.n = s + 1
        bar.set_postfix_str(f"loss {loss:.4f}")
        bar.refresh()

    try:
        res = train(steps, seed=seed, progress=step)
    finally:
        bar.close()
    grads = Gradients({n: g for n, (_, g) in res.captures.items()},
                      {n: s for n, (s, _) in res.captures.items()},
                      steps, seed, res.acc_before, res.acc_after,
                      np.asarray(res.losses, np.float32))
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.tmp")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, names=np.array(list(grads.captures)),
                         steps=np.array(list(grads.steps.values())),
                         train_steps=steps, seed=seed, acc_before=grads.acc_before,
                         acc_after=grads.acc_after, losses=grads.losses,
                         **{f"grad_{n}": g for n, g in grads.captures.items()})
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    return grads
