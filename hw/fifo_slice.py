"""FastFifo and FifoSlice: small FIFOs in distributed RAM with registered outputs.

``FastFifo`` has SyncFIFOBuffered's ports and timing (registered ``r_data``/``r_rdy``)
with shorter paths behind ``r_en``/``w_en``. ``FifoSlice`` is a register slice made of
a 4-entry FastFifo: like a skid-buffer slice (AxisRegisterSlice) every output, ``i.ready``
included, comes from a flip-flop, but the entries sit in distributed RAM (a RAM32M, four
LUT sites, per 6 bits) instead of two flip-flops and a LUT per bit; one more clock of
latency. Used where a slice carries a whole beat.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

__all__ = ["FastFifo", "FifoSlice"]


class FastFifo(Elaboratable):
    """SyncFIFOBuffered's ports and timing (registered ``r_data``/``r_rdy``) with shorter
    paths behind ``r_en``/``w_en``: no shared level counter (plain pointers), and
    ``w_rdy`` comes from a flip-flop, computed one clock early with one entry spare.
    For FIFOs whose handshakes sit at the end of deep logic; the writer must check
    ``w_rdy``."""

    def __init__(self, width, depth):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"FastFifo depth must be a power of two >= 2, got {depth}")
        self.width, self.depth = width, depth
        self.w_en, self.w_data, self.w_rdy = Signal(), Signal(width), Signal()
        self.r_en, self.r_data, self.r_rdy = Signal(), Signal(width), Signal()

    def elaborate(self, platform):
        m = Module()
        aw = ceil_log2(self.depth)
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[])
        wr = mem.write_port()
        rd = mem.read_port(domain="sync")
        wp = Signal(aw + 1)
        rp = Signal(aw + 1)
        w_rdy = Signal(init=1)
        # Stale by one clock: at most one write went in since, so one entry is spare.
        m.d.sync += w_rdy.eq((wp - rp)[:aw + 1] < self.depth - 1)
        do_write = Signal()
        do_read = Signal()
        m.d.comb += [
            self.w_rdy.eq(w_rdy),
            do_write.eq(self.w_en & w_rdy),
            wr.addr.eq(wp[:aw]), wr.data.eq(self.w_data), wr.en.eq(do_write),
            # Refill the output register when it is empty or being read.
            do_read.eq((wp != rp) & (~self.r_rdy | self.r_en)),
            rd.addr.eq(rp[:aw]), rd.en.eq(do_read), self.r_data.eq(rd.data),
        ]
        with m.If(do_write):
            m.d.sync += wp.eq(wp + 1)
        with m.If(do_read):
            m.d.sync += [rp.eq(rp + 1), self.r_rdy.eq(1)]
        with m.Elif(self.r_en):
            m.d.sync += self.r_rdy.eq(0)
        return m


class FifoSlice(wiring.Component):
    """A register slice as a 4-entry FastFifo: ``i.ready``, ``o.valid`` and ``o.payload``
    come from flip-flops like AxisRegisterSlice's, but the entries sit in distributed RAM
    (about 4 LUTs per 6 bits) instead of two flip-flops and a mux per bit; two clocks of
    latency instead of one."""

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = FastFifo(Shape.cast(self.shape).width, 4)
        m.d.comb += [
            fifo.w_en.eq(self.i.valid), fifo.w_data.eq(self.i.payload),
            self.i.ready.eq(fifo.w_rdy),
            self.o.valid.eq(fifo.r_rdy), self.o.payload.eq(fifo.r_data),
            fifo.r_en.eq(self.o.ready),
        ]
        return m
