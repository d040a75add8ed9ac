"""Runs frames through an engine's RTL (Verilator) and returns what came out.

Used by the engine testbenches:

    res = run_frames("tx", frames, k=10, enable=True, codec="bounded",
                     idle="none", backpressure="none", cfgs=None)
    res.frames_out      # [(bytes, tuser)] in output order
    res.cycles          # clock cycles from the first input beat to the last output beat
    res.in_cycles       # clock cycles from the first to the last accepted input beat
    res.in_beats, res.out_beats
    res.counters        # {name: value} read from the engine's counter ports at the end
    res.latency         # (min, max) clocks from a frame's first input beat to its first output beat
    res.latencies       # per output frame

Bulk runs without idle or backpressure patterns go faster through
``inceptionn.rtl.rtl_loop.run_frames``
(a compiled loop, same ``RunResult``); this cocotb path is for the protocol tests.

``frames`` is a list of ``bytes`` or ``(bytes, tuser)``; ``cfgs`` (optional) gives per
input frame None or a dict of configuration ports (``k``, ``codec``, ...) set as its
first beat is offered (``versions`` as a tuple or a mask), for mixed configurations back to back. The run itself is the cocotb
module ``sim/tb_engine_run.py``; the job and the results travel as pickle files named
by environment variables (``INCEPTIONN_JOB``, ``INCEPTIONN_RESULT``).

Engines are registered in ``DESIGNS``: kind -> (Verilog module name, design factory,
function frames -> [bool: this input frame comes out]): "tx" and "rx" from
``inceptionn.rtl.designs``, and "loopback" (TX -> link FIFO with random stalls -> RX,
sim/loopback_top.py).
"""

import os
import pickle
import tempfile

from ..golden import DSCP_DEFAULT
from ..rtl import harness
from ..rtl.designs import (COUNTER_NAMES, RunResult, normalize_frames, rx_design, tx_design,
                           tx_expected)
from ..rtl.designs import DESIGNS as _ENGINES
from .axis import PAUSE_MODES
# Imported, not wrapped: the Verilog cache keys a factory by its own source file.
from .loopback_top import loopback_design

__all__ = ["COUNTER_NAMES", "DESIGNS", "RunResult", "run_frames", "tx_design", "rx_design",
           "loopback_design"]


DESIGNS = {
    **_ENGINES,
    # TX -> link FIFO with random stalls -> RX; only TX drops frames (oversize)
    "loopback": ("loopback", loopback_design, tx_expected),
}


def run_frames(kind, frames, *, k=10, dscp=DSCP_DEFAULT, enable=True, codec="bounded", version=3,
               versions=(3,), idle="none", backpressure="none", seed=0, tag=None,
               timeout_cycles=None, cfgs=None):
    """Run `frames` through engine `kind` ("tx", ...) and return a RunResult. ``version``:
    TX's version port (the bounded codec's wire version, 2 or 3); ``versions``: RX's
    accepted versions (a tuple, as golden names them, or the port's mask)."""
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
        "codec": codec, "cfgs": cfgs, "version": int(version), "versions": versions,
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
