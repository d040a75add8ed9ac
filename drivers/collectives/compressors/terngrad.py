"""TernGrad (Wen et al., NIPS 2017): stochastic ternarization, Eqs. (1), (2) and (9).

Per layer (Section 3.3, layer-wise ternarizing): clip at c sigma (Eq. 9, c = 2.5), take
the scaler s = max |clipped| and share the largest over all workers (scaler sharing,
Section 3.1), then send sign(g) b with P(b = 1) = |g| / s. Unbiased: E[s sign(g) b] = g
(the clipped g). Wire: 2 bits a value, 4 values a byte (value i in bits [2(i%4)+1:2(i%4)]
of byte i//4; 00 = 0, 01 = +1, 10 = -1), then one float32 scaler per layer.

feedback=True (beyond the paper) keeps what a step's ternary values did not carry, the
clipped-off part and the rounding, x - s t, in the rank's Memory and adds it to the next
step's gradient (docs/compressors.md: measured, off by default).
"""

from dataclasses import replace

import numpy as np

from .base import Compressor, Payload, as_grad, scopes

__all__ = ["TernGrad", "pack2", "unpack2"]

_CODE = np.array([2, 0, 1], np.uint8)        # code of ternary t, indexed by t + 1
_TERN = np.array([0, 1, -1, 0], np.int8)     # code -> ternary (11 never sent)


def pack2(t: np.ndarray) -> bytes:
    """Ternary int8 values -> 2-bit codes, 4 to a byte."""
    c = np.zeros(-(-t.size // 4) * 4, np.uint8)
    c[:t.size] = _CODE[t.astype(np.int64) + 1]
    c = c.reshape(-1, 4)
    return (c[:, 0] | c[:, 1] << 2 | c[:, 2] << 4 | c[:, 3] << 6).astype(np.uint8).tobytes()


def unpack2(buf: bytes, n: int) -> np.ndarray:
    if len(buf) != -(-n // 4):
        raise ValueError(f"{n} ternary values need {-(-n // 4)} bytes, got {len(buf)}")
    b = np.frombuffer(buf, np.uint8)
    codes = (b[:, None] >> np.array([0, 2, 4, 6], np.uint8)) & np.uint8(3)
    return _TERN[codes.reshape(-1)[:n]]


class TernGrad(Compressor):
    """layers: sizes of the layers (default one); clip: c, or None for no clipping;
    feedback: error feedback through the rank's Memory."""
    collective = "allgather"
    prelude_op = "max"   # scaler sharing: the largest scaler per layer over all workers
    needs = ("layers", "feedback")

    def __init__(self, layers=None, clip: float | None = 2.5, feedback: bool = False):
        if not isinstance(feedback, bool):
            raise ValueError(f"feedback must be True or False, got {feedback!r}")
        self.layers, self.clip_c, self.feedback = layers, clip, feedback
        self.name = ("terngrad" if clip is not None else "terngrad_noclip") + \
            ("_ef" if feedback else "")

    def clip(self, grad: np.ndarray) -> np.ndarray:
        """Eq. (9) per layer, sigma the layer's standard deviation."""
        g = as_grad(grad)
        if self.clip_c is None:
            return g.copy()
        out = np.empty_like(g)
        lo = 0
        for n in scopes(self.layers, g.size):
            seg = g[lo:lo + n]
            bound = np.float32(self.clip_c * float(np.std(seg, dtype=np.float64)))
            out[lo:lo + n] = np.clip(seg, -bound, bound)
            lo += n
        return out

    def prelude(self, grad, state):
        c = self.clip(grad)
        sizes = scopes(self.layers, c.size)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        return np.maximum.reduceat(np.abs(c), starts).astype(np.float32)

    def compress(self, grad, state):
        g = self.clip(grad)
        sizes = scopes(self.layers, g.size)
        s = state.shared if state.shared is not None else self.prelude(grad, state)
        s_each = np.repeat(s.astype(np.float64), sizes)
        a = np.abs(g).astype(np.float64)
        p = np.divide(a, s_each, out=np.zeros_like(a), where=s_each > 0)
        b = state.rng().random(g.size) < p   # stochastic rounding, Eq. (2)
        t = (np.sign(g) * b).astype(np.int8)
        payload = Payload(values=pack2(t), scale=s.astype("<f4").tobytes())
        return payload, replace(state, shared=s, sent=(t,))

    def residual(self, x, state, info=None):
        """x minus this rank's own decoded contribution (as decompress restores it)."""
        s = state.shared.astype(np.float32)
        return x - state.sent[0].astype(np.float32) * np.repeat(s, scopes(self.layers, x.size))

    def decompress(self, payload, size, state):
        t = unpack2(payload.values, size)
        s = np.frombuffer(payload.scale, "<f4").astype(np.float32)
        return t.astype(np.float32) * np.repeat(s, scopes(self.layers, size))
