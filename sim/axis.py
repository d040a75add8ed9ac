"""The testbenches' stream driver and monitor: one valid/ready source and one sink
(StreamSource, StreamSink) under every stream a testbench drives or watches, on Amaranth
stream ports (port_source, port_sink: ``<port>__valid/__ready/__payload``), on ports
without a ready (a strobe with its data) and on 256-bit AXI-stream buses (AxisDriver,
AxisMonitor: whole frames); `Streams` ticks several on one clock, with a testbench's
per-clock checks.

cocotbext-axi stays the reference for protocol tests on the engines' and Corundum's
buses; these read and write each beat once (it touches the bus per byte), which makes
multi-thousand-frame runs practical, and they drive the packed payloads of the stages'
Amaranth streams, which it does not model. All take pause generators: an iterable of
bools, True meaning "idle this cycle".
"""

import itertools
import os
import random

import cocotb
from cocotb.triggers import ReadOnly, RisingEdge

from ..hw.wire import BEAT_BYTES

__all__ = ["frame_to_beats", "beats_to_frame", "StreamSource", "StreamSink", "Streams", "port_source",
           "port_sink", "AxisDriver", "AxisMonitor", "pause_generator", "PAUSE_MODES", "Clock",
           "start", "stress", "stress_count", "guard_strobe"]

from cocotb.clock import Clock  # re-exported for testbenches

PAUSE_MODES = ("none", "cyclic", "random")


def stress():
    """True under `make sim-stress` (INCEPTIONN_STRESS=1): the long runs and the builds
    `make test` leaves to it (docs/verification.md, "What make test leaves to the
    long targets")."""
    return os.environ.get("INCEPTIONN_STRESS", "0") not in ("", "0")


def stress_count(short, long):
    """Frames of a random stress run: `short` in `make test` (every frame kind and pause
    pattern still occurs), `long` under `make sim-stress` (INCEPTIONN_STRESS=1)."""
    return long if stress() else short


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


def frame_to_beats(frame, user=False, beat_bytes=BEAT_BYTES):
    """bytes -> [(data int, keep int, last, user)] per the spec's beat mapping, in beats
    of `beat_bytes` (the engines' 32, 64 for their 512-bit lanes)."""
    if not frame:
        raise ValueError("an AXI-stream frame has at least one byte")
    beats = []
    for off in range(0, len(frame), beat_bytes):
        chunk = frame[off:off + beat_bytes]
        last = off + beat_bytes >= len(frame)
        beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1,
                      int(last), int(bool(user) and last)))
    return beats


def beats_to_frame(beats, beat_bytes=BEAT_BYTES):
    """[(data, keep, ...)] -> bytes; keep must be a contiguous low mask (spec section 4)."""
    out = bytearray()
    for i, (data, keep, *_) in enumerate(beats):
        n = bin(keep).count("1")
        if keep != (1 << n) - 1:
            raise AssertionError(f"beat {i}: tkeep {keep:#010x} is not a contiguous low mask")
        if i + 1 < len(beats) and n != beat_bytes:
            raise AssertionError(f"beat {i}: only the last beat may be partial (tkeep {keep:#x})")
        out += data.to_bytes(beat_bytes, "little")[:n]
    return bytes(out)


def _sig(dut, prefix, name):
    return getattr(dut, f"{prefix}_t{name}")


_NO_ITEM = object()


class StreamSource:
    """Drives one valid/ready stream from a sequence of items, honouring ready: the one
    driver under every testbench's input streams. ``put(item)`` sets the payload signals
    for an item; an item may be a zero-argument callable, called on every clock it is
    offered (payload bits that are don't-care may then change while it waits, as a DUT
    must allow). ``pause``: True = idle this clock (pause_generator); ``on_taken(item)``,
    where given, runs as each item is taken; ``on_idle()`` on each clock nothing is
    offered (to scramble side inputs that only count with an item). ``step``, where
    given, is a zero-argument callable giving the trigger of one step instead of a
    rising edge of ``clk``: a combinational DUT (no clock) is stepped by a Timer.
    ``strobe``, where given, names a stream the DUT reads as a FIFO's read strobe: ready
    on a clock with nothing offered fails (guard_strobe's check, for a source that
    `Streams` ticks). ``ready`` None: a port without backpressure, which takes every
    item offered (the matcher sniffing a bus). ``offered``: the item on the bus this
    clock (None when idle), for a testbench's per-clock checks.

    One clock is ``before()`` (drive), the edge, ``after()`` (sample): `send` runs them
    in a coroutine of its own; `Streams` runs those of several streams in one."""

    def __init__(self, clk, valid, ready, put, pause=None, on_taken=None, on_idle=None,
                 step=None, strobe=None):
        self.clk, self.valid, self.ready, self.put = clk, valid, ready, put
        self.step = step or (lambda: RisingEdge(clk))
        self.pause = pause or pause_generator("none")
        self.on_taken, self.on_idle, self.strobe = on_taken, on_idle, strobe
        if ready is None and strobe:
            raise ValueError(f"{strobe}: a read strobe needs the ready it is read by")
        self.sent = 0
        self.load(())

    def load(self, items):
        """The items to send from the next clock on (valid drops until then)."""
        self._items, self._item, self._offered = iter(items), _NO_ITEM, False
        self.done = False
        self.valid.value = 0

    @property
    def offered(self):
        return self._item if self._offered else None

    def before(self):
        if self._item is _NO_ITEM and not self.done:
            self._item = next(self._items, _NO_ITEM)
            if self._item is _NO_ITEM:
                self.done = True
                self.valid.value = 0
        if self._item is _NO_ITEM:
            return
        # An item's pauses come before it is first offered; once offered it stays.
        if not self._offered:
            if next(self.pause):
                self.valid.value = 0
                if self.on_idle is not None:
                    self.on_idle()
                return
            self._offered = True
            self.put(self._item() if callable(self._item) else self._item)
            self.valid.value = 1
        elif callable(self._item):
            self.put(self._item())        # held items are written once: writes cost

    def after(self):
        ready = self.ready is None or self.ready.value
        if self._offered and ready:
            item, self._item, self._offered = self._item, _NO_ITEM, False
            self.sent += 1
            if self.on_taken is not None:
                self.on_taken(item)
        elif self.strobe and not self._offered and ready:
            raise AssertionError(f"{self.strobe} popped while empty")

    async def send(self, items):
        """Returns when the last item is taken."""
        self.load(items)
        while True:
            self.before()
            if self.done:
                return
            await self.step()
            self.after()


class StreamSink:
    """Takes one valid/ready stream, driving ready from ``pause`` (True = backpressure
    this clock); ``get()`` reads the payload of each item taken, kept in ``items``
    (or handed to ``on_item`` when given): the one monitor under every testbench's output
    streams. ``ready`` None: an output without backpressure (a strobe with its data),
    every valid clock an item. One clock is ``before()``, the edge, ``after()``, as for
    StreamSource."""

    def __init__(self, clk, valid, ready, get, pause=None, on_item=None):
        self.clk, self.valid, self.ready, self.get = clk, valid, ready, get
        self.pause = pause or pause_generator("none")
        self.on_item = on_item
        self.items = []
        self._ready = 0
        if ready is None and pause is not None:
            raise ValueError("a sink without ready cannot backpressure: no pause")
        if ready is not None:
            self.ready.value = 0

    def before(self):
        self._ready = 0 if next(self.pause) else 1
        if self.ready is not None:
            self.ready.value = self._ready

    def after(self):
        if self._ready and self.valid.value:
            item = self.get()
            if self.on_item is None:
                self.items.append(item)
            else:
                self.on_item(item)

    async def run(self):
        while True:
            self.before()
            await RisingEdge(self.clk)
            self.after()

    async def wait_items(self, n, timeout_cycles=1_000_000):
        await _wait(self.clk, lambda: len(self.items) >= n, timeout_cycles,
                    lambda: f"got {len(self.items)} of {n} items")


class Streams:
    """Several sources and sinks on one clock, ticked by one coroutine: a trigger per
    clock rather than one per stream, which made a six-input testbench 1.75x slower
    than its hand-written loop. Sources are loaded (``load``) before `run_until`.
    ``check()``, where given, runs on every clock once all are driven, in the clock's
    read-only phase before the edge: a testbench's per-clock checks of the outputs a
    DUT works out combinationally from the inputs of that clock. ``step``, as for
    StreamSource: the trigger of one step of a combinational DUT (no clock)."""

    def __init__(self, clk, *streams, check=None, step=None):
        self.clk, self.streams, self.check = clk, streams, check
        self.step = step or (lambda: RisingEdge(clk))
        self.cycle = 0        # clocks ticked; the samples of clock n see n

    async def tick(self):
        """One clock of every stream."""
        for s in self.streams:
            s.before()
        if self.check is not None:
            await ReadOnly()
            self.check()
        await self.step()
        self.cycle += 1
        for s in self.streams:
            s.after()

    async def run_until(self, done, timeout_cycles, what):
        """Tick every stream until ``done()``; TimeoutError naming ``what()`` after
        `timeout_cycles` clocks."""
        waited = 0
        while not done():
            if waited > timeout_cycles:
                raise TimeoutError(f"{what()} in {timeout_cycles} cycles")
            await self.tick()
            waited += 1

    async def run(self, cycles=None):
        """Tick every stream for `cycles` clocks (None: until cancelled)."""
        for _ in itertools.repeat(None) if cycles is None else range(cycles):
            await self.tick()


async def _wait(clk, done, timeout_cycles, what):
    waited = 0
    while not done():
        await RisingEdge(clk)
        waited += 1
        if waited > timeout_cycles:
            raise TimeoutError(f"{what()} in {timeout_cycles} cycles")


def port_source(dut, port, clk=None, pause=None, on_taken=None, strobe=False):
    """A StreamSource on an Amaranth stream port (``<port>__valid/__ready/__payload``):
    items are payload ints (or callables giving one). ``strobe``: the DUT reads the port
    as a FIFO's read strobe (StreamSource's check, named by the port)."""
    payload = getattr(dut, f"{port}__payload")

    def put(value):
        payload.value = value
    return StreamSource(clk or dut.clk, getattr(dut, f"{port}__valid"),
                        getattr(dut, f"{port}__ready"), put, pause, on_taken,
                        strobe=port if strobe else None)


def port_sink(dut, port, clk=None, pause=None, on_item=None):
    """A StreamSink on an Amaranth stream port: items are payload ints. A combinational
    DUT has no ``clk``: its sinks are ticked by a `Streams` with a ``step``."""
    payload = getattr(dut, f"{port}__payload")
    return StreamSink(clk or getattr(dut, "clk", None), getattr(dut, f"{port}__valid"),
                      getattr(dut, f"{port}__ready"), lambda: int(payload.value), pause, on_item)


async def guard_strobe(clk, valid, ready, name):
    """Fails if ``ready`` is high on a clock ``valid`` is low: for inputs the DUT reads as
    a FIFO's read strobe (popping an empty FIFO would lose or invent an entry). Run it
    beside the stream's StreamSource (cocotb.start_soon)."""
    while True:
        await RisingEdge(clk)
        assert not (ready.value and not valid.value), f"{name} popped while empty"


class AxisDriver(StreamSource):
    """Drives ``<prefix>_t*`` from a queue of frames, honouring tready, in beats of
    `beat_bytes` (32; 64 at 512 bits)."""

    def __init__(self, dut, clk, prefix="s_axis", pause=None, beat_bytes=BEAT_BYTES, **kw):
        self.tdata, self.tkeep, self.tlast, self.tuser = (
            _sig(dut, prefix, n) for n in ("data", "keep", "last", "user"))
        self.beat_bytes = beat_bytes
        super().__init__(clk, _sig(dut, prefix, "valid"), _sig(dut, prefix, "ready"),
                         self._put, pause, **kw)

    def _put(self, beat):
        self.tdata.value, self.tkeep.value, self.tlast.value, self.tuser.value = beat

    @property
    def beats_sent(self):
        return self.sent

    async def send(self, frames):
        """frames: iterable of bytes or (bytes, user). Returns when the last beat is taken."""
        def beats():
            for item in frames:
                frame, user = item if isinstance(item, tuple) else (item, False)
                yield from frame_to_beats(frame, user, self.beat_bytes)
        await super().send(beats())


class AxisMonitor(StreamSink):
    """Collects frames from ``<prefix>_t*`` in beats of `beat_bytes`, driving tready from
    a pause generator; ``on_beat(beat, first)``, where given, sees each beat taken
    (``first``: it starts a frame)."""

    def __init__(self, dut, clk, prefix="m_axis", pause=None, beat_bytes=BEAT_BYTES,
                 on_beat=None):
        sig = [_sig(dut, prefix, n) for n in ("data", "keep", "last", "user")]
        super().__init__(clk, _sig(dut, prefix, "valid"), _sig(dut, prefix, "ready"),
                         lambda: tuple(int(x.value) for x in sig), pause, self._beat)
        self.frames = []      # list of (bytes, user)
        self.beats = 0
        self.beat_bytes, self.on_beat = beat_bytes, on_beat
        self._cur = []

    @property
    def partial(self):
        """Whether a frame has begun and not ended."""
        return bool(self._cur)

    def _beat(self, beat):
        self.beats += 1
        if self.on_beat is not None:
            self.on_beat(beat, not self._cur)
        self._cur.append(beat)
        if beat[2]:
            self.frames.append((beats_to_frame(self._cur, self.beat_bytes), bool(beat[3])))
            self._cur = []

    async def wait_frames(self, n, timeout_cycles=1_000_000):
        await _wait(self.clk, lambda: len(self.frames) >= n, timeout_cycles,
                    lambda: f"got {len(self.frames)} of {n} frames")


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
