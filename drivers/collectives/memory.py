"""Error feedback as one object (GRACE's memory: `compensate` before the exchange,
`update` after it), per rank and per parameter, for every method that loses values:
the ring's codecs (INCEPTIONN's, truncation) and the compressors whose `feedback` is on
(top-k, gTop-k, random-k, block-random-k, ScaleCom, TernGrad when asked). What the
exchange dropped or rounded this step is added to the next step's values.

The ring codes partial sums, not only this rank's values, so "what this rank lost" is
the error of every hop it coded: its own block on the first hop, each partial sum it
passed on, and, as a block's owner, the final sum. `LossRecorder` wraps the ring's
codec and adds each encoded chunk's error (values - decode(encode(values))) at the
chunk's place in the buffer. Summed over ranks these errors are exactly the exchange's
total error (the sums telescope; forwarding decoded values re-codes them unchanged), so
with the memory the sum of every value any rank computed reaches the model, late
rather than never. A compressor's residual is what its own rank kept back
(`Compressor.residual`, computed by the communicator after the collective).

The memory is keyed by parameter, not by bucket: DDP rebuilds its buckets after the
first step (other parameters under the same index, in another order), and a parameter
keeps its residual in whichever bucket it lands. A simulated rank's whole vector is one
key (`compressors.base.WHOLE`).
"""

from __future__ import annotations

import contextlib
import threading

import numpy as np

__all__ = ["Memory", "LossRecorder", "feedback"]


def _layout(params, size: int):
    """(key, offset, n) per parameter of a bucket given as [(key, n), ...] in order."""
    out, off = [], 0
    for key, n in params:
        out.append((key, off, int(n)))
        off += int(n)
    if off != size:
        raise ValueError(f"the bucket's parameters hold {off} values, its buffer {size}")
    return out


class Memory:
    """Residuals per parameter (float32). `compensate(x, params)` adds them to the bucket
    x in place; `update(params, residual)` keeps the new ones (GRACE's split). With
    `beta` (ScaleCom's low-pass filter, Eq. 5) the kept residual is
    (1 - beta) old + beta new, old 0 for a parameter not seen yet."""

    def __init__(self, beta: float | None = None):
        if beta is not None and not 0 < beta <= 1:
            raise ValueError(f"beta must be in (0, 1], got {beta}")
        self.beta = None if beta is None else np.float32(beta)
        self.residual: dict = {}

    def compensate(self, x: np.ndarray, params) -> np.ndarray:
        for key, off, n in _layout(params, x.size):
            r = self.residual.get(key)
            if r is not None:
                if r.size != n:
                    raise ValueError(f"parameter {key!r} had {r.size} values, now {n}")
                x[off:off + n] += r
        return x

    def update(self, params, residual: np.ndarray) -> None:
        b = self.beta
        for key, off, n in _layout(params, residual.size):
            old = self.residual.get(key)
            if b is None and old is not None and old.size == n:
                old[:] = residual[off:off + n]      # in place: no fresh pages each step
                continue
            new = np.array(residual[off:off + n], np.float32)
            if b is not None:
                new = (np.float32(1) - b) * (np.zeros_like(new) if old is None else old) + b * new
            self.residual[key] = new

    def adopt(self, params, residual: np.ndarray) -> None:
        """update without the copy: each parameter's residual becomes a view of
        `residual`, which the caller must not write again until it has compensated with
        it (the DDP hook records the next step's loss into the same buffer)."""
        if self.beta is not None:
            raise ValueError("a filtered memory (beta) keeps its own residuals: use update")
        for key, off, n in _layout(params, residual.size):
            self.residual[key] = residual[off:off + n]

    def held_in(self, params, buf: np.ndarray) -> bool:
        """Whether every parameter's residual is `buf` at its place in the bucket (as
        `adopt` left them), so that `buf` is the bucket's whole residual."""
        base = buf.__array_interface__["data"][0]
        for key, off, n in _layout(params, buf.size):
            r = self.residual.get(key)
            if (r is None or r.size != n or r.dtype != buf.dtype or not r.flags.c_contiguous
                    or r.__array_interface__["data"][0] != base + off * buf.itemsize):
                return False
        return True

    def clear(self, params) -> None:
        """No residual for a bucket laid out as `params` any more (after an exchange that
        dropped nothing): dropped rather than zeroed, so that the next compensate of a
        bucket that stays on such an exchange has nothing to add."""
        for key, _ in params:
            self.residual.pop(key, None)

    def gather(self, params) -> np.ndarray:
        """The residuals of a bucket laid out as `params` (0 where a parameter has none)."""
        lay = list(params)
        out = np.zeros(sum(int(n) for _, n in lay), np.float32)
        for key, off, n in _layout(lay, out.size):
            r = self.residual.get(key)
            if r is not None:
                out[off:off + n] = r
        return out

    def norm(self) -> float:
        """The residuals' L2 norm, all parameters together (for reports)."""
        return float(np.sqrt(sum(float(np.dot(r, r)) for r in self.residual.values())))


class LossRecorder:
    """A ring codec that also accumulates, while `recording(x)` is on, each chunk's coding
    error at its offset in x (the ring encodes views of x). Anything encoded from outside
    x is an error: a ring that coded copies would otherwise lose the feedback silently."""

    wire_codec = True           # make_codec passes it through as a hop's codec

    def __init__(self, codec):
        self.inner = codec
        self.name, self.k = codec.name, getattr(codec, "k", None)   # k: INCEPTIONN's codecs
        self._base: np.ndarray | None = None
        self._loss: np.ndarray | None = None
        # Chunks are coded on several threads, each adding into its own span of the loss;
        # spans being added into are listed, and one that overlaps waits for them.
        self._free = threading.Condition()
        self._busy: list[tuple[int, int]] = []

    def __repr__(self):
        return f"<LossRecorder of {self.inner!r}>"

    def start(self, x: np.ndarray, out: np.ndarray | None = None, zeroed: bool = False) -> None:
        """Record the losses of chunks of x from now on, into `out` (zeroed here unless
        `zeroed` says the caller did; float32 of x's size, which the caller does not read
        until stop) or a new array."""
        if out is None:
            loss = np.zeros(x.size, np.float32)
        elif out.dtype != np.float32 or out.shape != (x.size,) or not out.flags.c_contiguous:
            raise ValueError("out must be a contiguous float32 array of x's size")
        else:
            loss = out
            if not zeroed:
                loss.fill(0)
        self._base, self._loss = x, loss

    def stop(self) -> np.ndarray:
        loss, self._base, self._loss = self._loss, None, None
        if loss is None:
            raise RuntimeError("the recorder was not started")
        return loss

    @property
    def recording(self) -> bool:
        return self._loss is not None

    def record(self, values: np.ndarray, delivered: np.ndarray) -> None:
        """Add values - delivered at the place of `values` (a view of the buffer) in x.
        The float32 wires call it with what the receiver will decode (the golden codec's
        roundtrip: on "emulate" the receiver applies it, on "nic" the engine is bit-exact
        with it)."""
        base, loss = self._base, self._loss      # one recording, even if stopped meanwhile
        if base is not None and loss is not None:
            from .codecs import add_error
            off = _offset(values, base)
            with self._span(off, values.size):
                add_error(loss[off:off + values.size], values, delivered)

    @contextlib.contextmanager
    def _span(self, off: int, n: int):
        """Adding into loss[off:off + n], once no other thread adds into any of it."""
        span = (off, off + n)
        with self._free:
            while any(a < span[1] and span[0] < b for a, b in self._busy):
                self._free.wait()
            self._busy.append(span)
        try:
            yield
        finally:
            with self._free:
                self._busy.remove(span)
                self._free.notify_all()

    def _encode_recorded(self, values: np.ndarray, keep: bool, divide_by: int = 1):
        """The inner codec's encode with the loss added (and the values kept) in its own
        pass, where it has one (codecs.WireCodec, ScaledCodec) and values is a plain
        chunk; else None."""
        fused = getattr(self.inner, "encode_recorded", None)
        base, loss = self._base, self._loss
        if fused is None:
            return None
        if base is None or loss is None:          # not recording
            return fused(values, None, keep, divide_by) if keep else None
        off = _offset(values, base)
        with self._span(off, values.size):
            return fused(values, loss[off:off + values.size], keep, divide_by)

    def encode(self, values: np.ndarray) -> bytes:
        if self.recording:
            body = self._encode_recorded(values, keep=False)
            if body is not None:
                return body
        body = self.inner.encode(values)
        if self.recording:
            self.record(values, self.inner.decode(body, values.size))
        return body

    def encode_keep(self, values: np.ndarray, divide_by: int = 1) -> bytes:
        """encode, and values replaced by what the receiver decodes (a block's owner keeps
        it), divided by `divide_by` (a ring keeping its mean): one pass where the inner
        codec has one, else one decode serves the loss and the copy."""
        body = self._encode_recorded(values, keep=True, divide_by=divide_by)
        if body is not None:
            return body
        body = self.inner.encode(values)
        decoded = self.inner.decode(body, values.size)
        self.record(values, decoded)
        if divide_by == 1:
            values[:] = decoded
        else:
            np.divide(decoded, np.float32(divide_by), out=values)
        return body

    def encode_frames(self, values: np.ndarray, piece: int, keep: bool = False,
                      divide_by: int = 1) -> np.ndarray:
        """A chunk's frames in one call (the inner codec's encode_frames: ScaledCodec's),
        its loss recorded while recording (one span and one offset a chunk), with keep
        as encode_keep's."""
        frames = self.inner.encode_frames
        base, loss = self._base, self._loss
        if base is None or loss is None:          # not recording
            return frames(values, piece, keep=keep, divide_by=divide_by)
        off = _offset(values, base)
        with self._span(off, values.size):
            return frames(values, piece, loss=loss[off:off + values.size], keep=keep,
                          divide_by=divide_by)

    def decode_frames(self, wire, out: np.ndarray, piece: int, add: bool = False,
                      divide_by: int = 1) -> None:
        self.inner.decode_frames(wire, out, piece, add, divide_by)

    def decode(self, buf, n: int) -> np.ndarray:
        return self.inner.decode(buf, n)

    def decode_into(self, buf, out: np.ndarray, add: bool = False, divide_by: int = 1) -> None:
        from .codecs import decode_into
        decode_into(self.inner, buf, out, add, divide_by)

    def roundtrip(self, values: np.ndarray) -> np.ndarray:
        return self.inner.roundtrip(values)


def _offset(view: np.ndarray, base: np.ndarray) -> int:
    """Where the contiguous float32 `view` starts inside `base`."""
    d = view.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    if (view.dtype != np.float32 or not view.flags.c_contiguous or d % 4
            or not 0 <= d // 4 <= base.size - view.size):
        raise RuntimeError("the ring coded values outside the buffer it was given: the "
                           "error feedback cannot place their loss")
    return d // 4


@contextlib.contextmanager
def feedback(memory: Memory | None, recorder, x: np.ndarray, params,
             loss: np.ndarray | None = None, compensated: bool = False):
    """Error feedback around one exchange of x on the ring (GRACE's compensate, exchange,
    update): x compensated with the memory's residuals, the ring's coding recorded by
    `recorder` (its LossRecorder) while the body sums x, the recorded loss kept as the
    new residuals. `loss`: the buffer it is recorded into, which becomes their home
    (Memory.adopt); by default a new one. Without a memory, the body alone.
    compensated: x has the residuals added in and `loss` (their buffer) is zeroed
    already (the DDP hook's snapshot does both in its copy's pass)."""
    if memory is None:
        yield
        return
    if compensated and loss is None:
        raise ValueError("a compensated exchange records into the residuals' buffer")
    if not compensated:
        memory.compensate(x, params)
    # The residuals may be views of `loss` (adopted last time): added in just now, so it
    # is free to be zeroed and to record this exchange's loss.
    recorder.start(x, out=loss, zeroed=compensated)
    try:
        yield
    finally:
        loss = recorder.stop()
    memory.adopt(params, loss)      # no copy: the loss is the new residual
