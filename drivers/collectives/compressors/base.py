"""One interface for every gradient compressor (in the style of GRACE).

A compressor turns a 1-D float32 gradient into a `Payload` (the exact bytes a worker
puts on the wire) and back. Everything that changes from step to step (step counter,
values agreed with the other workers) lives in an explicit, immutable `State`, so a run
is reproducible from its seed alone. Error feedback is not the compressor's: a method
that keeps back what it did not send says so (`feedback = True`) and says what it kept
(`residual`); the communicator adds the rank's `Memory` (drivers/collectives/memory.py,
the one the ring's codecs use too) before compressing and updates it after the
collective, as GRACE splits them. A compressor declares what else it needs in `needs`
(a density `k`, per-layer sizes `layers`), so a caller (the DDP hook) keeps no lists.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np

from ..memory import Memory

__all__ = ["COLLECTIVES", "WHOLE", "Payload", "State", "Float32Codec", "Compressor", "Reducible",
           "DenseCompressor", "NoCompression", "as_grad", "scopes", "counts", "topk_indices",
           "scatter"]

# What a method needs from the network; collectives.run simulates each one.
COLLECTIVES = ("allreduce", "allgather", "gtopk_tree", "ring_inc")
# The memory's key for a whole simulated gradient (the hook keys by parameter instead).
WHOLE = "grad"


@dataclass(frozen=True)
class Payload:
    """The wire bytes of one worker's compressed gradient."""
    values: bytes = b""   # coded values
    index: bytes = b""    # int32 LE indices or block starts, when not implied by a shared seed
    scale: bytes = b""    # float32 LE scalers

    @property
    def nbytes(self) -> int:
        return len(self.values) + len(self.index) + len(self.scale)


@dataclass(frozen=True)
class State:
    """Per-worker state. Never mutated: methods return a new one."""
    rank: int = 0
    world: int = 1
    seed: int = 0
    step: int = 0
    # The rank's error-feedback Memory (None: the method keeps none). One mutable object
    # for the whole run, shared by the states that follow each other (and by every
    # bucket's state in the DDP hook); `layout` is where this state's values sit in it.
    memory: Memory | None = None
    layout: tuple = ()                 # ((key, n), ...): the gradient's parameters in order
    shared: np.ndarray | None = None   # agreed by all workers this step (scalers, indices)
    sent: tuple | None = None          # what this worker sent this step (method-specific)

    def rng(self, shared: bool = False) -> np.random.Generator:
        # Keys of different lengths: default_rng([a, b]) equals default_rng([a, b, 0]).
        key = [self.seed, self.step, 0] if shared else [self.seed, self.step, 1, self.rank]
        return np.random.default_rng(key)

    def compensate(self, grad: np.ndarray) -> np.ndarray:
        """Gradient plus the residual carried from earlier steps (a new float32 array)."""
        x = np.array(grad, np.float32)
        return x if self.memory is None else self.memory.compensate(x, self.layout)

    def residual(self) -> np.ndarray | None:
        """The residual the memory holds for this state's values (None: no memory)."""
        return None if self.memory is None else self.memory.gather(self.layout)


class Float32Codec:
    """Lossless: little-endian float32."""
    name = "f32"

    def encode(self, v: np.ndarray) -> bytes:
        return np.ascontiguousarray(v, dtype="<f4").tobytes()

    def decode(self, buf: bytes, n: int) -> np.ndarray:
        if len(buf) != 4 * n:
            raise ValueError(f"{n} float32 values need {4 * n} bytes, got {len(buf)}")
        return np.frombuffer(buf, dtype="<f4").astype(np.float32)


class Compressor:
    """Base class. Subclasses set `collective` and implement compress/decompress; one
    that keeps a residual sets `feedback` and implements `residual`."""
    name = "compressor"
    collective = "allgather"
    prelude_op: str | None = None   # "max": element-wise max over workers; "leader": broadcast
    codec = Float32Codec()          # per-hop codec of the ring collectives
    feedback = False                # keeps back what it does not send (error feedback)
    # What the constructor takes from its caller's context: "k" (a density or count),
    # "layers" (the sizes of the gradient's parameters, in order), "codec" (the value
    # codec's settings: its name, the error bound 2^-k, the bound's kind and share),
    # "feedback" (error feedback is the method's option: the caller's on/off).
    needs: tuple[str, ...] = ()
    # The wires the ring can carry this method's values on: "software" (its codec's
    # bytes on plain sockets), "plain" (float32, no codec), "nic" and "emulate" (the
    # INCEPTIONN NIC's engines code them, or the golden model does on receipt).
    wires: tuple[str, ...] = ("software",)
    # Summed by the ring transports themselves (the socket ring on any of its wires, the
    # torch ring, the worker-aggregator), its codec being the NIC's or none; the other
    # methods' steps are the communicator's (communicator.exchange).
    ring_native = False

    def init(self, size: int, rank: int = 0, world: int = 1, seed: int = 0,
             memory: Memory | None = None, layout=None) -> State:
        """The state of rank `rank` before its first step. memory: the rank's Memory to
        share (the hook's, across buckets); a new one by default where `feedback` is on.
        layout: ((key, n), ...) of the gradient's parameters (default one key, WHOLE)."""
        if not 0 <= rank < world:
            raise ValueError(f"rank {rank} outside 0..{world - 1}")
        lay = ((WHOLE, size),) if layout is None else tuple((k, int(n)) for k, n in layout)
        if sum(n for _, n in lay) != size:
            raise ValueError(f"the layout holds {sum(n for _, n in lay)} values, not {size}")
        if self.feedback and memory is None:
            memory = self.new_memory()
        return State(rank=rank, world=world, seed=seed,
                     memory=memory if self.feedback else None, layout=lay)

    def new_memory(self) -> Memory:
        """The memory this method's error feedback keeps (ScaleCom's filters it)."""
        return Memory()

    def residual(self, x: np.ndarray, state: State, info=None) -> np.ndarray:
        """What this rank kept back this step: x (the compensated gradient) minus what it
        contributed, after the collective (info: the collective's outcome, gTop-k's
        global indices). Only for methods with `feedback`."""
        raise NotImplementedError(f"{self.name} keeps no residual")

    def prelude(self, grad: np.ndarray, state: State) -> np.ndarray | None:
        """Small array this worker contributes to the agreement before compressing."""
        return None

    def compress(self, grad: np.ndarray, state: State) -> tuple[Payload, State]:
        raise NotImplementedError

    def decompress(self, payload: Payload, size: int, state: State) -> np.ndarray:
        raise NotImplementedError

    def finish(self, state: State, info=None) -> State:
        """End of the step, after the collective: the next step starts clean."""
        return replace(state, step=state.step + 1, shared=None, sent=None)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class Reducible(Compressor):
    """A compressor whose values can be summed element-wise across workers (all workers
    send the same coordinates), so a ring all-reduce can carry them."""
    collective = "allreduce"

    def select(self, grad: np.ndarray, state: State) -> tuple[np.ndarray, State]:
        raise NotImplementedError

    def nvalues(self, size: int, state: State) -> int:
        raise NotImplementedError

    def expand(self, vals: np.ndarray, size: int, state: State) -> np.ndarray:
        raise NotImplementedError

    def compress(self, grad, state):
        vals, state = self.select(as_grad(grad), state)
        return Payload(values=self.codec.encode(vals)), state

    def decompress(self, payload, size, state):
        vals = self.codec.decode(payload.values, self.nvalues(size, state))
        return self.expand(vals, size, state)


class DenseCompressor(Reducible):
    """Every value, through a value codec; in a ring every hop re-codes its block."""
    collective = "ring_inc"

    def __init__(self, codec, name: str):
        self.codec, self.name = codec, name

    def select(self, grad, state):
        return grad, state

    def nvalues(self, size, state):
        return size

    def expand(self, vals, size, state):
        return vals


class NoCompression(DenseCompressor):
    """Baseline: plain float32 ring all-reduce."""
    collective = "allreduce"
    wires = ("plain",)
    ring_native = True

    def __init__(self):
        super().__init__(Float32Codec(), "none")


# ---------------------------------------------------------------- helpers

def as_grad(grad) -> np.ndarray:
    """A 1-D float32 array; anything else is an error (no silent cast)."""
    a = np.asarray(grad)
    if a.dtype != np.float32 or a.ndim != 1:
        raise ValueError(f"expected a 1-D float32 gradient, got {a.dtype} of shape {a.shape}")
    return a


def scopes(layers, size: int) -> np.ndarray:
    """Layer sizes (int64) covering `size` values; None means one layer."""
    sizes = np.array([size] if layers is None else list(layers), dtype=np.int64)
    if sizes.size == 0 or sizes.min() < 1 or int(sizes.sum()) != size:
        raise ValueError(f"layer sizes {list(sizes)} must be >= 1 and add up to {size}")
    return sizes


def counts(k, sizes: np.ndarray) -> np.ndarray:
    """Values kept per scope: an int k per scope (clamped to its size), or a density."""
    if isinstance(k, bool) or not isinstance(k, numbers.Real) or k <= 0:
        raise ValueError(f"k must be a count >= 1 or a density in (0, 1], got {k!r}")
    if isinstance(k, numbers.Integral):
        return np.minimum(sizes, int(k))
    if float(k) > 1:
        raise ValueError(f"a density k must be in (0, 1], got {k}")
    return np.clip(np.round(sizes * float(k)).astype(np.int64), 1, sizes)


def topk_indices(x: np.ndarray, k: int) -> np.ndarray:
    """Indices (sorted, int64) of the k largest |x|; ties go to the lower index, so the
    choice is deterministic and exactly k."""
    a = np.abs(x)
    if k >= a.size:
        return np.arange(a.size, dtype=np.int64)
    thr = np.partition(a, a.size - k)[a.size - k]
    above = np.flatnonzero(a > thr)
    tied = np.flatnonzero(a == thr)[:k - above.size]
    return np.sort(np.concatenate([above, tied])).astype(np.int64)


def scatter(idx: np.ndarray, vals: np.ndarray, size: int) -> np.ndarray:
    out = np.zeros(size, np.float32)
    out[idx] = vals
    return out
