"""FrameStore: a ring of 32-byte beats in block RAM, written in order, read at random.

The compression engine keeps two: the original frames and the compressed payload
beats. A ring of ``depth`` beats (1024 by default: 32 KiB, the same eight 36-Kbit BRAMs
a 576-beat double buffer of two 9216-byte frames would take) holds at least two
maximum-size frames, so a frame can be received while the previous one is sent: the
store is double-buffered, and smaller frames simply pack more per ring.

Write side: ``w_en`` writes ``w_data`` at the write pointer ``wp`` and advances it;
``w_room`` says the ring has a free entry (the writer must check it). Read side:
``r_addr``/``r_en`` with one clock of latency (registered BRAM read); ``rel``/``rel_en``
moves the release pointer: entries before ``rel`` may be overwritten. Pointers carry
one wrap bit above the address so that full and empty differ.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from .wire import BEAT_BITS

__all__ = ["FrameStore"]


class FrameStore(wiring.Component):
    def __init__(self, depth=1024):
        if depth & (depth - 1):
            raise ValueError(f"FrameStore depth must be a power of two, got {depth}")
        self.depth = depth
        aw = ceil_log2(depth)
        self.addr_width = aw
        super().__init__({
            "w_en": In(1),
            "w_data": In(BEAT_BITS),
            "w_room": Out(1),
            "wp": Out(aw + 1),
            "rel_en": In(1),
            "rel": In(aw + 1),
            "r_en": In(1),
            "r_addr": In(aw),
            "r_data": Out(BEAT_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        aw = self.addr_width
        m.submodules.mem = mem = Memory(shape=BEAT_BITS, depth=self.depth, init=[])
        wr = mem.write_port()
        rd = mem.read_port(domain="sync")

        wp = Signal(aw + 1)
        rel = Signal(aw + 1)
        # w_room comes from a flip-flop (writers put it on their ready paths): computed
        # from the registered pointers, keeping one entry spare for the write that may
        # happen in the same clock; a release shows one clock later.
        room = Signal(init=1)
        m.d.sync += room.eq((wp - rel)[:aw + 1] < self.depth - 1)
        m.d.comb += [
            self.w_room.eq(room),
            self.wp.eq(wp),
            wr.addr.eq(wp[:aw]), wr.data.eq(self.w_data), wr.en.eq(self.w_en),
            rd.addr.eq(self.r_addr), rd.en.eq(self.r_en), self.r_data.eq(rd.data),
        ]
        with m.If(self.w_en):
            m.d.sync += wp.eq(wp + 1)
        with m.If(self.rel_en):
            m.d.sync += rel.eq(self.rel)
        return m
