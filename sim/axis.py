"""Lean 256-bit AXI-stream driver and monitor for bulk regression.

cocotbext-axi stays the reference for protocol tests; these read and write each beat
once (it touches the bus per byte), which makes multi-thousand-frame runs practical.
Both take pause generators: an iterable of bools, True meaning "idle this cycle".
"""

import itertools
import os
import random

import cocotb
from cocotb.triggers import RisingEdge

from ..hw.wire import BEAT_BYTES

__all__ = ["frame_to_beats", "beats_to_frame", "AxisDriver", "AxisMonitor",
           "pause_generator", "PAUSE_MODES", "Clock", "start", "stress_count"]

from cocotb.clock import Clock  # re-exported for testbenches

PAUSE_MODES = ("none", "cyclic", "random")


def stress_count(short, long):
    """Frames of a random stress run: `short` in `make test` (every frame kind and pause
    pattern still occurs), `long` under `make sim-stress` (INCEPTIONN_STRESS=1)."""
    return long if os.environ.get("INCEPTIONN_STRESS", "0") not in ("", "0") else short


def pause_generator(mode, seed=0):
    """Idle/backpressure patterns used across every testbench's matrix."""
    if mode == "none":
        return itertools.repeat(False)
    if mode == "cyclic":
        return itertools.cycle([False, False, True, False, True, True, False])
    if mode == "random":
        rng = random.Random(seed)
        return (rng.random() < 0.3 for _ in itertools.count())
    raise ValueError(f"unknown pause mode {mode!r}; expected one of {PAUSE_MODES}")


def frame_to_beats(frame, user=False):
    """bytes -> [(data int, keep int, last, user)] per the spec's beat mapping."""
    if not frame:
        raise ValueError("an AXI-stream frame has at least one byte")
    beats = []
    for off in range(0, len(frame), BEAT_BYTES):
        chunk = frame[off:off + BEAT_BYTES]
        last = off + BEAT_BYTES >= len(frame)
        beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                      int(last), int(bool(user) and last)))
    return beats


def beats_to_frame(beats):
    """[(data, keep, ...)] -> bytes; keep must be a contiguous low mask (spec section 4)."""
    out = bytearray()
    for i, (data, keep, *_) in enumerate(beats):
        n = bin(keep).count("1")
        if keep != (1 << n) - 1:
            raise AssertionError(f"beat {i}: tkeep {keep:#010x} is not a contiguous low mask")
        if i + 1 < len(beats) and n != BEAT_BYTES:
            raise AssertionError(f"beat {i}: only the last beat may be partial (tkeep {keep:#x})")
        out += data.to_bytes(BEAT_BYTES, "little")[:n]
    return bytes(out)


def _sig(dut, prefix, name):
    return getattr(dut, f"{prefix}_t{name}")


class AxisDriver:
    """Drives ``<prefix>_t*`` from a queue of frames, honouring tready."""

    def __init__(self, dut, clk, prefix="s_axis", pause=None):
        self.clk = clk
        self.tdata, self.tkeep, self.tlast, self.tuser, self.tvalid, self.tready = (
            _sig(dut, prefix, n) for n in ("data", "keep", "last", "user", "valid", "ready"))
        self.pause = pause or pause_generator("none")
        self.tvalid.value = 0
        self.beats_sent = 0

    async def send(self, frames):
        """frames: iterable of bytes or (bytes, user). Returns when the last beat is taken."""
        for item in frames:
            frame, user = item if isinstance(item, tuple) else (item, False)
            for data, keep, last, usr in frame_to_beats(frame, user):
                while next(self.pause):
                    self.tvalid.value = 0
                    await RisingEdge(self.clk)
                self.tdata.value = data
                self.tkeep.value = keep
                self.tlast.value = last
                self.tuser.value = usr
                self.tvalid.value = 1
                await RisingEdge(self.clk)
                while not self.tready.value:
                    await RisingEdge(self.clk)
                self.beats_sent += 1
        self.tvalid.value = 0


class AxisMonitor:
    """Collects frames from ``<prefix>_t*``, driving tready from a pause generator."""

    def __init__(self, dut, clk, prefix="m_axis", pause=None):
        self.clk = clk
        self.tdata, self.tkeep, self.tlast, self.tuser, self.tvalid, self.tready = (
            _sig(dut, prefix, n) for n in ("data", "keep", "last", "user", "valid", "ready"))
        self.pause = pause or pause_generator("none")
        self.frames = []      # list of (bytes, user)
        self.beats = 0
        self._cur = []
        self.tready.value = 0

    async def run(self):
        while True:
            self.tready.value = 0 if next(self.pause) else 1
            await RisingEdge(self.clk)
            if self.tvalid.value and self.tready.value:
                beat = (int(self.tdata.value), int(self.tkeep.value),
                        int(self.tlast.value), int(self.tuser.value))
                self.beats += 1
                self._cur.append(beat)
                if beat[2]:
                    self.frames.append((beats_to_frame(self._cur), bool(beat[3])))
                    self._cur = []

    async def wait_frames(self, n, timeout_cycles=1_000_000):
        waited = 0
        while len(self.frames) < n:
            await RisingEdge(self.clk)
            waited += 1
            if waited > timeout_cycles:
                raise TimeoutError(f"got {len(self.frames)} of {n} frames in {timeout_cycles} cycles")


async def start(dut, inputs, reset_cycles=2):
    """Starts the 250 MHz clock, drives `inputs` ({port name: value}, the DUT's idle
    handshakes) and holds reset for `reset_cycles` clocks: every block testbench's opening."""
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    for name, value in inputs.items():
        getattr(dut, name).value = value
    for _ in range(reset_cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
