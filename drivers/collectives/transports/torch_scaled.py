"""The scale-following bound on the torch transport: the socket ring's ScaledCodec
(codecs.py) with the device codec, so a CUDA bucket is scaled and coded on its GPU.

A chunk's frame is the socket ring's: one byte, s - SCALE_MIN, then the bounded codec's
groups of the values times 2^-s; beside it the device codec's index (its block offsets,
counted in the groups after the byte). s is chosen as codecs.choose_scale chooses it
(the same octave count, from a 256-bin histogram of the exponents taken on the values'
device), and the scaling is the same exact product by a power of two (one rounding to
float32 beyond the normal range), so a chunk's bytes and decoded values equal the
socket ring's bit for bit (tests/test_torch_scaled.py) and the bound is the same:
|error| <= 2^(s-k) per value, s per chunk and hop.
"""

from __future__ import annotations

import numpy as np
import torch

from ..codecs import DEFAULT_SHARE, SCALE_MAX, SCALE_MIN
from ..device_codec import DEFAULT_BLOCK, DeviceCodec
from .torch_ring import DEFAULT_CHUNK, TorchRing
from .links import DEFAULT_TIMEOUT

__all__ = ["ScaledDeviceCodec", "ScaledTorchRing", "choose_scale_tensor", "times_2_to"]

_EXP_BIAS, _EXP_NONFINITE = 127, 255


def choose_scale_tensor(x: torch.Tensor, k: int, share: float = DEFAULT_SHARE) -> int:
    """codecs.choose_scale for a float32 tensor on any device: the largest s at which at
    least `share` of the finite values (one at least) reach 2^-k once scaled by 2^-s,
    kept within SCALE_MIN..SCALE_MAX and far from overflow for the largest value."""
    exp = (x.reshape(-1).view(torch.int32) >> 23) & 0xFF           # the sign falls off
    hist = torch.bincount(exp.to(torch.int64), minlength=256).cpu().numpy()
    nonfinite = int(hist[_EXP_NONFINITE])
    finite = int(hist.sum()) - nonfinite
    if finite == 0:
        return 0
    m = max(1, int(np.ceil(share * finite)))
    at_least = np.cumsum(hist[:_EXP_NONFINITE][::-1])[::-1]         # values of octave >= e
    e_m = int(np.count_nonzero(at_least >= m)) - 1                   # the largest such e
    e_max = int(np.flatnonzero(hist[:_EXP_NONFINITE])[-1])
    s = e_m - _EXP_BIAS + k if e_m > 0 else SCALE_MIN               # subnormal: finest
    s = max(s, e_max - _EXP_BIAS - 120, SCALE_MIN)
    return min(s, SCALE_MAX)


def times_2_to(x: torch.Tensor, s: int) -> torch.Tensor:
    """x 2^s in float32, rounded once (exact where the result is normal): a product with
    the power of two where it is a normal float32, through float64 beyond (as
    codecs._times_2_to's ldexp)."""
    if -126 <= s <= 127:
        return x * (2.0 ** s)
    return (x.to(torch.float64) * (2.0 ** s)).to(torch.float32)


class ScaledDeviceCodec:
    """The bounded device codec at 2^-k on each chunk scaled by 2^-s; encode, decode and
    roundtrip as DeviceCodec's, the scale byte first in the groups."""

    def __init__(self, k: int, share: float = DEFAULT_SHARE, block: int = DEFAULT_BLOCK,
                 impl: str = "auto"):
        if isinstance(share, bool) or not isinstance(share, (int, float)) \
                or not 0 < share <= 1:
            raise ValueError(f"share must be in (0, 1], got {share!r}")
        self.inner = DeviceCodec("bounded", k, block, impl)
        self.k, self.block, self.share = self.inner.k, self.inner.block, float(share)
        self.name = f"bounded-scaled-{self.share:g}"

    def __repr__(self):
        return f"<ScaledDeviceCodec bounded 2^(s-{self.k}), share {self.share:g}>"

    def scale(self, x: torch.Tensor) -> int:
        return choose_scale_tensor(x, self.k, self.share)

    def encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.scale(x)
        data, index = self.inner.encode(times_2_to(x, -s))
        head = torch.tensor([s - SCALE_MIN], dtype=torch.uint8, device=data.device)
        return torch.cat([head, data]), index

    def decode(self, data: torch.Tensor, index: torch.Tensor, n: int) -> torch.Tensor:
        if data.numel() < 1:
            raise ValueError(f"a scaled frame of {n} values has no scale byte")
        s = int(data[0].item()) + SCALE_MIN      # every byte is a scale of the range
        return times_2_to(self.inner.decode(data[1:], index, n), s)

    def roundtrip(self, x: torch.Tensor) -> torch.Tensor:
        s = self.scale(x)
        return times_2_to(self.inner.roundtrip(times_2_to(x, -s)), s)


class ScaledTorchRing(TorchRing):
    """TorchRing (Algorithm 1 over the process group's point-to-point) with every hop's
    chunk scaled by its own 2^-s: the bounded codec only (the paper's cannot be scaled,
    codecs.ScaledCodec says why)."""

    def __init__(self, group=None, *, k: int = 10, share: float = DEFAULT_SHARE,
                 chunk: int = DEFAULT_CHUNK, block: int = DEFAULT_BLOCK,
                 timeout: float = DEFAULT_TIMEOUT, pipeline: bool = True):
        super().__init__(group, codec="bounded", k=k, chunk=chunk, block=block,
                         timeout=timeout, pipeline=pipeline)
        self.codec = ScaledDeviceCodec(k, share, block)   # type: ignore[assignment]

    def settings(self) -> dict:
        return dict(super().settings(), share=self.codec.share)
