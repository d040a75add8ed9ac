"""AlignmentUnit (paper Fig. 9): variable-length byte vectors -> full 32-byte AXI beats.

The bytes go into a ring of 4 beat-sized slots (128 bytes). The write side never waits
for the read side, and the read side never shifts data:

- Accept (stage A): the vector's place in the ring is fixed from the write pointer
  ``wp`` alone (byte offset ``wp mod 32`` and first slot ``wp div 32``). A vector with
  ``last`` rounds ``wp`` up to the next slot, so every packet starts at a slot
  boundary; the bytes of the packet's final slot past its end are written as zeros.
- Write (stage B, next clock): the registered vector is shifted up by the byte offset
  into a 3-slot window and written, with per-byte enables, into the slots it covers.
  Then the "released" slot pointer ``rel`` moves: slots before the one holding the
  newest byte are released (more bytes follow them, so they are not the packet's
  last); a ``last`` vector also releases the final slot and marks it ``last``.
- Read: the slot at ``rp`` is the output beat; ``o.valid = rp != rel``. Holding the
  newest (possibly full) slot back until more bytes or ``last`` arrive is what lets
  a packet whose length is a multiple of 32 end with a full beat carrying ``last``.

``i.ready`` reserves room for a whole 36-byte vector: the ring must have 36 free bytes,
counting the slot leaving this clock (so it depends on ``o.ready`` through two gates).
That sustains one beat per clock with one vector of up to 32 bytes per clock; above
32 bytes per clock on average the input is stalled.

A packet of zero bytes in total (only zero-length vectors) produces no beat.
Vector lengths above 36 are not valid input.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import BEAT_BYTES, axis_signature
from .shifter_tree import shift_bytes_left

__all__ = ["AlignmentUnit", "ByteVector", "VECTOR_BYTES"]

VECTOR_BYTES = 36

ByteVector = data.StructLayout({
    "data": 8 * VECTOR_BYTES,   # byte 0 in bits [7:0]
    "length": 6,                # valid bytes 0..36
    "last": 1,                  # final vector of the packet
})

SLOTS = 4                       # ring of 4 beats; pointers carry one extra wrap bit
RING = SLOTS * BEAT_BYTES       # 128 bytes
WINDOW = 3                      # a vector at offset <= 31 spans at most 3 slots


class AlignmentUnit(wiring.Component):
    i: In(stream.Signature(ByteVector))
    o: Out(axis_signature())

    def elaborate(self, platform):
        m = Module()

        wp = Signal(8)          # byte write pointer, mod 256 (= 2 x RING)
        rp = Signal(3)          # read slot pointer, mod 8
        rel = Signal(3)         # slots before this one may be read
        pkt_bytes = Signal()    # the current packet has at least one byte

        slot_data = Array(Signal(8 * BEAT_BYTES, name=f"slot{s}") for s in range(SLOTS))
        slot_last = Signal(SLOTS)
        slot_keep = Array(Signal(BEAT_BYTES, name=f"slot{s}_keep") for s in range(SLOTS))

        # ---- read side -------------------------------------------------------------
        rd = rp[0:2]
        emit = Signal()
        m.d.comb += [
            self.o.valid.eq(rp != rel),
            self.o.payload.data.eq(slot_data[rd]),
            self.o.payload.last.eq(slot_last.bit_select(rd, 1)),
            self.o.payload.keep.eq(Mux(slot_last.bit_select(rd, 1), slot_keep[rd], ~0)),
            self.o.payload.user.eq(0),
            emit.eq(self.o.valid & self.o.ready),
        ]
        with m.If(emit):
            m.d.sync += rp.eq(rp + 1)

        # ---- accept (stage A) --------------------------------------------------------
        used = Signal(8)        # bytes between the read slot and wp (0..128)
        room = Signal()
        room_after_emit = Signal()
        m.d.comb += [
            used.eq(wp - Cat(C(0, 5), rp)),
            room.eq(used <= RING - VECTOR_BYTES),
            room_after_emit.eq(used <= RING + BEAT_BYTES - VECTOR_BYTES),
            self.i.ready.eq(room | (emit & room_after_emit)),
        ]
        accept = Signal()
        m.d.comb += accept.eq(self.i.valid & self.i.ready)

        vin = self.i.payload
        length = Signal(6)
        m.d.comb += length.eq(vin.length)
        end = Signal(8)         # wp + length
        last_byte = Signal(8)   # position of the packet's newest byte
        has_bytes = Signal()    # the packet has bytes once this vector is in
        m.d.comb += [
            end.eq(wp + length),
            last_byte.eq(end - 1),
            has_bytes.eq(pkt_bytes | (length != 0)),
        ]
        wp_next = Signal(8)
        rel_next = Signal(3)
        rel_upd = Signal()
        mark_last = Signal()
        with m.If(vin.last):
            m.d.comb += [wp_next.eq(wp), mark_last.eq(has_bytes), rel_upd.eq(has_bytes),
                         rel_next.eq(last_byte[5:8] + 1)]
            with m.If(has_bytes):
                m.d.comb += wp_next.eq(Cat(C(0, 5), last_byte[5:8] + 1))
        with m.Else():
            m.d.comb += [wp_next.eq(end), rel_upd.eq(length != 0), rel_next.eq(last_byte[5:8])]

        # Zero the bytes past `length` so that shifting them in writes zeros.
        vmask = Signal(8 * VECTOR_BYTES)
        m.d.comb += vmask.eq(Cat(*((length > b).replicate(8) for b in range(VECTOR_BYTES))))

        a_valid = Signal()
        a_data = Signal(8 * VECTOR_BYTES)
        a_off = Signal(5)       # byte offset of the vector in its first slot
        a_slot = Signal(2)      # first slot
        a_wend = Signal(7)      # window bytes [a_off, a_wend) are written
        a_rel_upd = Signal()
        a_rel = Signal(3)
        a_mark = Signal()
        a_last_slot = Signal(2)
        a_keep = Signal(BEAT_BYTES)

        m.d.sync += a_valid.eq(accept)
        with m.If(accept):
            m.d.sync += [
                wp.eq(wp_next),
                pkt_bytes.eq(has_bytes & ~vin.last),
                a_data.eq(vin.data & vmask),
                a_off.eq(wp[0:5]),
                a_slot.eq(wp[5:7]),
                a_wend.eq(wp[0:5] + (wp_next - wp)[0:7]),
                a_rel_upd.eq(rel_upd),
                a_rel.eq(rel_next),
                a_mark.eq(mark_last),
                a_last_slot.eq(last_byte[5:7]),
                a_keep.eq(Cat(*(last_byte[0:5] >= b for b in range(BEAT_BYTES)))),
            ]

        # ---- write (stage B) ---------------------------------------------------------
        wbytes = WINDOW * BEAT_BYTES
        win = shift_bytes_left(m, a_data, a_off, wbytes, name="win")
        wen = Signal(wbytes)    # byte enables over the 3-slot window
        m.d.comb += wen.eq(Cat(*((a_off <= j) & (a_wend > j) for j in range(wbytes))))
        with m.If(a_valid):
            for s in range(SLOTS):
                # Which window slot (0..2) lands in ring slot s; 3 = none.
                d = Signal(2, name=f"d{s}")
                m.d.comb += d.eq(s - a_slot)
                for b in range(BEAT_BYTES):
                    with m.Switch(d):
                        for w in range(WINDOW):
                            with m.Case(w):
                                j = w * BEAT_BYTES + b
                                with m.If(wen[j]):
                                    m.d.sync += slot_data[s][8 * b:8 * b + 8].eq(win[8 * j:8 * j + 8])
            with m.If(a_rel_upd):
                m.d.sync += rel.eq(a_rel)
            with m.If(a_mark):
                m.d.sync += slot_keep[a_last_slot].eq(a_keep)

        # Slot last flags: set by stage B, cleared when the slot is read (never the
        # same slot in one clock: the read slot is released, the marked one was not).
        last_set = Signal(SLOTS)
        last_clr = Signal(SLOTS)
        m.d.comb += [
            last_set.eq(Mux(a_valid & a_mark, C(1, SLOTS) << a_last_slot, 0)),
            last_clr.eq(Mux(emit, C(1, SLOTS) << rd, 0)),
        ]
        m.d.sync += slot_last.eq((slot_last & ~last_clr) | last_set)
        return m
