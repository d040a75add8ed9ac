"""Runs frames through an engine's RTL (Verilator) and returns what came out.

Used by the demo, the hardware benchmark and the engine tests:

    res = run_frames("tx", frames, k=10, dscp=10, enable=True, idle="none", backpressure="none")
    res.frames_out      # [(bytes, tuser)] in output order
    res.cycles          # clock cycles from the first input beat to the last output beat
    res.in_cycles       # clock cycles from the first to the last accepted input beat
    res.in_beats, res.out_beats
    res.counters        # {name: value} read from the engine's counter ports at the end
    res.latency         # (min, max) clocks from a frame's first input beat to its first output beat
    res.latencies       # per output frame

Bulk runs without idle or backpressure patterns go faster through ``rtl_loop.run_frames``
(a compiled loop, same ``RunResult``); this cocotb path is for the protocol tests.

``frames`` is a list of ``bytes`` or ``(bytes, tuser)``. The run itself is the cocotb
module ``sim/tb_engine_run.py``; the job and the results travel as pickle files named
by environment variables (``INCEPTIONN_JOB``, ``INCEPTIONN_RESULT``).

Engines are registered in ``DESIGNS``: kind -> (Verilog module name, design factory,
function frames -> number of frames expected out): "tx", "rx" and "loopback" (TX -> link
FIFO with random stalls -> RX, sim/loopback_top.py).
"""

import os
import pickle
import tempfile
from dataclasses import dataclass, field

from . import harness
from .axis import PAUSE_MODES

__all__ = ["COUNTER_NAMES", "DESIGNS", "RunResult", "run_frames", "tx_design", "rx_design", "loopback_design"]


# The engines' counter ports (spec section 6), as far as each engine has them.
COUNTER_NAMES = ("frames_in", "frames_out", "compressed", "decompressed", "bypassed",
                 "fallback", "malformed", "dropped", "payload_bytes_in", "payload_bytes_out")


def tx_design():
    from ..hw.axis import AxisTop
    from ..hw.compression_engine import CompressionEngine
    return AxisTop(CompressionEngine())


def _tx_expected(frames):
    from ..golden import MAX_FRAME_BYTES
    return [len(f) <= MAX_FRAME_BYTES for f, _ in frames]


def rx_design():
    from ..hw.axis import AxisTop
    from ..hw.decompression_engine import DecompressionEngine
    return AxisTop(DecompressionEngine())


def _rx_expected(frames):
    # RX never drops: every frame comes out (restored, flagged or unchanged).
    return [True] * len(frames)


def loopback_design():
    from .loopback_top import loopback_design as factory
    return factory()


# kind -> (module name, design factory, frames -> [bool: this input frame comes out])
DESIGNS = {
    "tx": ("compression_engine", tx_design, _tx_expected),
    "rx": ("decompression_engine", rx_design, _rx_expected),
    # TX -> link FIFO with random stalls -> RX; only TX drops frames (oversize)
    "loopback": ("loopback", loopback_design, _tx_expected),
}


@dataclass
class RunResult:
    frames_out: list
    cycles: int
    in_beats: int
    out_beats: int
    counters: dict
    latencies: list = field(default_factory=list)
    in_cycles: int = 0

    @property
    def latency(self):
        if not self.latencies:
            return (None, None)
        return (min(self.latencies), max(self.latencies))


def normalize_frames(frames):
    """(bytes, tuser) pairs from frames given as bytes or (bytes, tuser); empty is an error."""
    out = []
    for item in frames:
        frame, user = item if isinstance(item, tuple) else (item, False)
        frame = bytes(frame)
        if not frame:
            raise ValueError("frames must hold at least one byte")
        out.append((frame, bool(user)))
    return out


def run_frames(kind, frames, *, k=10, dscp=10, enable=True, idle="none", backpressure="none",
               seed=0, tag=None, timeout_cycles=None):
    """Run `frames` through engine `kind` ("tx", ...) and return a RunResult."""
    if kind not in DESIGNS:
        raise ValueError(f"unknown engine kind {kind!r}; known: {sorted(DESIGNS)}")
    for mode in (idle, backpressure):
        if mode not in PAUSE_MODES:
            raise ValueError(f"unknown pause mode {mode!r}; expected one of {PAUSE_MODES}")
    if not 0 <= int(dscp) <= 63:
        raise ValueError(f"dscp must be in 0..63, got {dscp!r}")
    if not 0 <= int(k) <= 127:
        raise ValueError(f"k must fit the 7-bit port (0..127), got {k!r}")
    name, factory, expected = DESIGNS[kind]
    frames = normalize_frames(frames)
    comes_out = expected(frames)
    job = {
        "frames": frames, "comes_out": comes_out, "k": int(k), "dscp": int(dscp),
        "enable": bool(enable), "idle": idle, "backpressure": backpressure, "seed": seed,
        "timeout_cycles": timeout_cycles or (64 * sum(len(f) // 32 + 1 for f, _ in frames) + 20_000),
    }
    tag = tag or f"run_{kind}_{os.getpid()}"
    with tempfile.TemporaryDirectory(prefix="engine_run_") as tmp:
        job_path = os.path.join(tmp, "job.pkl")
        res_path = os.path.join(tmp, "result.pkl")
        with open(job_path, "wb") as f:
            pickle.dump(job, f)
        harness.run(factory, name, "inceptionn.sim.tb_engine_run", tag=tag,
                    env={"INCEPTIONN_JOB": job_path, "INCEPTIONN_RESULT": res_path})
        with open(res_path, "rb") as f:
            res = pickle.load(f)
    return RunResult(**res)
