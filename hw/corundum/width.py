"""Width adapters between a NIC's AXI stream and the engines' 256-bit beats.

A NIC beat and an engine beat share one layout shape (``nic_beat``): data, keep (a
contiguous low mask, full on every beat but the last), last, ``user`` (the bad-frame
bit) and ``side``, the frame's side-band (Corundum's tid, tdest and the rest of tuser),
carried unchanged so that the beat that starts a frame also starts its side-band.

- Upsizer: r narrow beats -> one wide beat (64 -> 256 on the 10G boards: the engine
  then needs one clock in four, so the NIC's stream keeps its full rate); a frame's
  last narrow beat closes the wide beat early.
- Downsizer: one wide beat -> up to r narrow beats, stopping after the last lane that
  holds bytes (256 -> 64 on the way out; 512 -> 256 into each of the engines' lanes at
  512 bits, hw/engine_lanes.py, where two lanes side by side keep 512 bits a clock).

``user`` of a wide beat is the OR of its narrow beats' (Corundum sets it on the last
beat only); on the way down it goes to the last narrow beat of the wide one.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["nic_beat", "Upsizer", "Downsizer", "width_adapter"]


def nic_beat(data_bits, side_bits):
    if data_bits % 8 or data_bits < 8:
        raise ValueError(f"stream width must be a whole number of bytes, got {data_bits}")
    return data.StructLayout({
        "data": data_bits,
        "keep": data_bits // 8,
        "last": 1,
        "user": 1,
        "side": max(side_bits, 1),
    })


def _ratio(wide_bits, narrow_bits):
    if wide_bits % narrow_bits or (wide_bits // narrow_bits) & (wide_bits // narrow_bits - 1):
        raise ValueError(f"widths {narrow_bits} and {wide_bits} are not a power-of-two ratio")
    return wide_bits // narrow_bits


class Upsizer(wiring.Component):
    """``i`` narrow beats into ``o`` wide beats; ``o`` is a register."""

    def __init__(self, narrow_bits, wide_bits, side_bits):
        self.r = _ratio(wide_bits, narrow_bits)
        self.nb = narrow_bits
        super().__init__({"i": In(stream.Signature(nic_beat(narrow_bits, side_bits))),
                          "o": Out(stream.Signature(nic_beat(wide_bits, side_bits)))})

    def elaborate(self, platform):
        m = Module()
        r, nb, nk = self.r, self.nb, self.nb // 8
        o = self.o.payload
        idx = Signal(range(r))
        full = Signal()
        m.d.comb += [self.o.valid.eq(full), self.i.ready.eq(~full | self.o.ready)]
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += full.eq(0)
        with m.If(self.i.valid & self.i.ready):
            p = self.i.payload
            with m.Switch(idx):
                for lane in range(r):
                    with m.Case(lane):
                        m.d.sync += [o.data[lane * nb:(lane + 1) * nb].eq(p.data),
                                     o.keep[lane * nk:(lane + 1) * nk].eq(p.keep)]
                        if lane == 0:
                            # A new wide beat: no stale bytes or keep bits past the frame.
                            m.d.sync += [o.data[nb:].eq(0), o.keep[nk:].eq(0),
                                         o.side.eq(p.side), o.user.eq(p.user)]
                        else:
                            m.d.sync += o.user.eq(o.user | p.user)
            done = p.last | (idx == r - 1)
            m.d.sync += [o.last.eq(p.last), idx.eq(Mux(done, 0, idx + 1))]
            with m.If(done):
                m.d.sync += full.eq(1)
        return m


class Downsizer(wiring.Component):
    """``i`` wide beats into ``o`` narrow beats; the wide beat is held in a register and
    sent lane by lane."""

    def __init__(self, wide_bits, narrow_bits, side_bits):
        self.r = _ratio(wide_bits, narrow_bits)
        self.nb = narrow_bits
        super().__init__({"i": In(stream.Signature(nic_beat(wide_bits, side_bits))),
                          "o": Out(stream.Signature(nic_beat(narrow_bits, side_bits)))})

    def elaborate(self, platform):
        m = Module()
        r, nb, nk = self.r, self.nb, self.nb // 8
        held = Signal.like(self.i.payload)
        valid = Signal()
        idx = Signal(range(r))
        lanes_d = [held.data[j * nb:(j + 1) * nb] for j in range(r)]
        lanes_k = [held.keep[j * nk:(j + 1) * nk] for j in range(r)]
        # The wide beat's last lane that holds a byte (keep is a contiguous low mask),
        # found when the beat is taken, so that "this lane ends the beat" is one compare
        # of registers: it feeds the side-band FIFO's pop and must stay shallow.
        last_lane = Signal(range(r))
        last_next = Signal(range(r))
        for j in range(1, r):
            with m.If(self.i.payload.keep[j * nk]):
                m.d.comb += last_next.eq(j)
        ends = Signal()
        m.d.comb += ends.eq(idx == last_lane)
        with m.Switch(idx):
            for j in range(r):
                with m.Case(j):
                    m.d.comb += [self.o.payload.data.eq(lanes_d[j]),
                                 self.o.payload.keep.eq(lanes_k[j])]
        o = self.o.payload
        m.d.comb += [
            self.o.valid.eq(valid),
            o.last.eq(held.last & ends),
            o.user.eq(held.user & ends),
            o.side.eq(held.side),
        ]
        take_next = ~valid | (self.o.ready & ends)
        m.d.comb += self.i.ready.eq(take_next)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += idx.eq(Mux(ends, 0, idx + 1))
        with m.If(take_next):
            m.d.sync += [held.eq(self.i.payload), valid.eq(self.i.valid),
                         last_lane.eq(last_next)]
        return m


def width_adapter(from_bits, to_bits, side_bits):
    """The adapter from one width to another, or None where they are equal."""
    if from_bits == to_bits:
        return None
    if from_bits < to_bits:
        return Upsizer(from_bits, to_bits, side_bits)
    return Downsizer(from_bits, to_bits, side_bits)
