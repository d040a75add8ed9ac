"""AlignmentUnit (paper Fig. 9): variable-length byte vectors -> full 32-byte AXI beats.

The bytes go into a ring of 4 beat-sized slots (128 bytes). The write side never waits
for the read side, and the read side never shifts data:

- Accept (stage A): the vector's place in the ring is fixed from the write pointer
  ``wp`` alone (byte offset ``off = wp mod 32`` and first slot ``wp div 32``). A vector
  with ``last`` rounds ``wp`` up to the next slot, so every packet starts at a slot
  boundary (by default the final beat's bytes past ``keep`` are sent as zeros).
  Bytes 0..31 are rotated by ``off`` as they are registered, which puts each in its
  lane; bytes 32 and 33 are registered as they are.
- Write (stage B, next clock): the rotated bytes are written with per-byte enables
  into the (up to 2) slots they cover, so no wide window shifter is needed: a lane
  takes one of them per vector, so each lane's slot bytes are a 4-entry distributed-RAM
  memory (one entry per slot) with one write port. Bytes 32 and 33 (lanes ``off`` and
  ``off + 1`` of the slot after the first, or the one after that for byte 33 when
  ``off`` is 31) go to a small per-slot store instead: their lane ``off``, the two bytes
  and a valid flag each. A slot holds at most one such pair (32 bytes of the same
  vector precede it), so that is exact; a slot's flags are cleared as it is read.
  Then the "released" slot pointer ``rel`` moves: slots before the one holding the
  newest byte are released (more bytes follow them, so they are not the packet's
  last); a ``last`` vector also releases the final slot and marks it ``last``.
- Read: the slot at ``rp`` is the output beat; ``o.valid = rp != rel``. Each lane is
  its memory's byte, or byte 32 or 33 of the slot's store where its lane matches.
  Holding the newest (possibly full) slot back until more bytes or ``last`` arrive is
  what lets a packet whose length is a multiple of 32 end with a full beat carrying
  ``last``.

``i.ready`` reserves room for a whole 34-byte vector: the ring must have 34 free bytes,
counting the slot leaving this clock (so it depends on ``o.ready`` through two gates).
That sustains one beat per clock with one vector of up to 32 bytes per clock; above
32 bytes per clock on average the input is stalled.

A packet of zero bytes in total (only zero-length vectors) produces no beat.
Vector lengths above 34 are not valid input (a CompressionUnit group is at most 34
bytes; keeping the bytes past 32 to two is what lets them skip the rotation and the
per-lane memories).

``fill``: the vector is its data bytes 0..3 repeated (byte i = data byte i mod 4; bytes
4.. of ``data`` are ignored), for a packet's first vector only (it starts on a slot
boundary, so no rotation is involved). The repeated word is selected into the rotation
registers in the rotation's last LUT, which has inputs to spare; a producer whose
vectors are mostly either a repeated word or other data (the compression engine's
prefix: P mod 32 placeholder bytes and the shim word) spares a 34-byte select.

``clear_stale=False`` leaves the final beat's bytes past ``keep`` as whatever the slot
held (``keep`` is still right): for a consumer that masks by ``keep`` itself (the
compression engine's egress does), which saves the AND behind the read mux.
"""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .axis import axis_signature
from .wire import BEAT_BYTES

__all__ = ["AlignmentUnit", "ByteVector", "VECTOR_BYTES"]

VECTOR_BYTES = 34

ByteVector = data.StructLayout({
    "data": 8 * VECTOR_BYTES,   # byte 0 in bits [7:0]
    "length": 6,                # valid bytes 0..36
    "last": 1,                  # final vector of the packet
    "fill": 1,                  # byte i is data byte i mod 4 (a packet's first vector only)
})

SLOTS = 4                       # ring of 4 beats; pointers carry one extra wrap bit
RING = SLOTS * BEAT_BYTES       # 128 bytes
WINDOW = 2                      # bytes 0..31 at offset <= 31 span at most 2 slots


def mux_tree(sel, cands):
    """``cands[sel]`` as a binary tree of 2:1 muxes over distinct inputs (one tree per
    output bit, nothing shared), which synthesis maps as wide muxes; a Switch becomes a
    decoded AND-OR of more LUTs."""
    level = list(cands)
    for bit in range(len(sel)):
        level = [Mux(sel[bit], level[2 * i + 1], level[2 * i]) for i in range(len(level) // 2)]
    return level[0]


def rotate_bytes_left(m, value, amount, nbytes, name="rot", cut=False):
    """Byte ``i`` of ``value`` (zero-extended to ``nbytes``) moves to byte
    ``(i + amount) mod nbytes`` (``amount`` 5 bits).

    ``cut=False``: two radix stages, rotate by ``amount[0:2]`` (a 4:1 mux) then by
    ``4 * amount[2:]`` (an 8:1 mux), each per output byte as a mux tree; left to the
    mapper, a full 32-byte rotation takes about 4.5 LUTs per bit.
    ``cut=True``: rotate by ``amount[0:2]``, then by ``4 * amount[2:4]``, each a 4:1
    AND-OR over the decoded select on a kept net (one LUT6 per bit), then by
    ``16 * amount[4]`` (2:1, left free to merge into the register's enable LUT): three
    LUTs per bit. Best for a rotation of dense data; a mostly-zero value (a few bytes
    zero-extended) maps smaller uncut."""
    width = 8 * nbytes

    def rot(v, nb):
        k = (8 * nb) % width
        return Cat(v[width - k:], v[:width - k]) if k else v

    cur = Signal(width, name=f"{name}_in")
    m.d.comb += cur.eq(value)
    if not cut:
        stages = ((0, 2), (2, len(amount)))
    else:
        stages = ((0, 2), (2, 4), (4, len(amount)))
    unit = 1
    for lo, hi in stages:
        sel = amount[lo:hi]
        cands = [rot(cur, c * unit) for c in range(1 << (hi - lo))]
        if cut and hi < len(amount):
            # A kept net: without it the mapper merges the stages again.
            nxt = Signal(width, name=f"{name}_s{lo}", attrs={"keep": 1})
            acc = C(0, width)
            for c, v in enumerate(cands):
                acc = acc | ((sel == c).replicate(width) & v)
            m.d.comb += nxt.eq(acc)
        else:
            nxt = Signal(width, name=f"{name}_s{lo}")
            m.d.comb += nxt.eq(mux_tree(sel, cands))
        cur = nxt
        unit <<= hi - lo
    return cur


class AlignmentUnit(wiring.Component):
    i: In(stream.Signature(ByteVector))
    o: Out(axis_signature())

    def __init__(self, clear_stale=True):
        self.clear_stale = clear_stale
        super().__init__()
        # Driven only when elaborated for formal checks (platform "formal"): the slots
        # marked last (stage B's pending mark included) and the open packet's bytes.
        self.formal_lasts = Signal(range(SLOTS + 2))
        self.formal_bytes = Signal()

    def elaborate(self, platform):
        m = Module()

        wp = Signal(8)          # byte write pointer, mod 256 (= 2 x RING)
        rp = Signal(3)          # read slot pointer, mod 8
        rel = Signal(3)         # slots before this one may be read
        pkt_bytes = Signal()    # the current packet has at least one byte

        # Slot bytes: per lane, a 4-entry memory (one entry per slot) in distributed RAM;
        # in one clock a lane takes at most one of the rotated bytes 0..31 (into the slot
        # ``a_slot + below``). Bytes 32 and 33 go to the per-slot store: their lane
        # (``xs``), the bytes (``x0``, ``x1``) and whether each is there (``xv0``,
        # ``xv1``). Data need no reset (nothing reads them before it is written), which
        # keeps the reset fan-out to the control state.
        lo_mem = []
        for b in range(BEAT_BYTES):
            mem = Memory(shape=8, depth=SLOTS, init=[])
            m.submodules[f"lo{b}"] = mem
            lo_mem.append((mem.write_port(), mem.read_port(domain="comb")))
        xs = [Signal(5, name=f"slot{s}_xs", reset_less=True) for s in range(SLOTS)]
        x0 = [Signal(8, name=f"slot{s}_x0", reset_less=True) for s in range(SLOTS)]
        x1 = [Signal(8, name=f"slot{s}_x1", reset_less=True) for s in range(SLOTS)]
        xv0 = Signal(SLOTS)
        xv1 = Signal(SLOTS)
        slot_last = Signal(SLOTS)
        slot_keep = Array(Signal(BEAT_BYTES, name=f"slot{s}_keep", reset_less=True)
                          for s in range(SLOTS))

        # ---- read side -------------------------------------------------------------
        rd = rp[0:2]
        emit = Signal()
        o_last = Signal()
        o_keep = Signal(BEAT_BYTES)
        o_data = Signal(8 * BEAT_BYTES)
        r_xs = Signal(5)
        r_x0 = Signal(8)
        r_x1 = Signal(8)
        r_xv = Signal(2)
        m.d.comb += [
            r_xs.eq(mux_tree(rd, xs)), r_x0.eq(mux_tree(rd, x0)), r_x1.eq(mux_tree(rd, x1)),
            r_xv.eq(Cat(xv0.bit_select(rd, 1), xv1.bit_select(rd, 1))),
        ]
        for b in range(BEAT_BYTES):
            # Byte 32 sits at lane xs, byte 33 at lane xs + 1 (mod 32).
            at0 = r_xv[0] & (r_xs == b)
            at1 = r_xv[1] & (r_xs == (b - 1) % BEAT_BYTES)
            m.d.comb += [lo_mem[b][1].addr.eq(rd),
                         o_data[8 * b:8 * b + 8].eq(Mux(at0, r_x0, Mux(at1, r_x1,
                                                                       lo_mem[b][1].data)))]
        if self.clear_stale:
            # The final slot of a packet holds stale bytes past its end: send zeros.
            o_data = o_data & Cat(*(k.replicate(8) for k in o_keep))
        m.d.comb += [
            o_last.eq(slot_last.bit_select(rd, 1)),
            o_keep.eq(Mux(o_last, slot_keep[rd], ~0)),
            self.o.valid.eq(rp != rel),
            self.o.payload.data.eq(o_data),
            self.o.payload.last.eq(o_last),
            self.o.payload.keep.eq(o_keep),
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
            used.eq(Cat(wp[0:5], wp[5:8] - rp)),   # wp - 32 * rp, mod 256
            room.eq(used <= RING - VECTOR_BYTES),
            room_after_emit.eq(used <= RING + BEAT_BYTES - VECTOR_BYTES),
            self.i.ready.eq(room | (emit & room_after_emit)),
        ]
        accept = Signal()
        m.d.comb += accept.eq(self.i.valid & self.i.ready)

        vin = self.i.payload
        length = Signal(6)
        off = Signal(5)         # byte offset of the vector in its first slot
        m.d.comb += [length.eq(vin.length), off.eq(wp[0:5])]
        # Everything below derives from rel_end = off + length (0..67), the vector's
        # end relative to the start of its first slot, and small slot-number sums.
        rel_end = Signal(7)
        m.d.comb += rel_end.eq(off + length)
        # The end is inside a slot (not on a boundary): length != -off (mod 32), a compare
        # beside the adder (wp_neg = -wp mod 32 is kept in a register), not behind it.
        wp_neg = Signal(5)
        nz = Signal()
        m.d.comb += nz.eq(length[0:5] != wp_neg)
        # Slot of the newest byte relative to wp's slot is rel_end[5:7] - 1 + nz (-1..2),
        # the first slot after it one more (0..3). The five possible sums with wp's
        # slot are formed from wp alone, in parallel with the adder, then selected.
        wp_plus = [Signal(3, name=f"wp_plus{c + 1}") for c in range(-1, 4)]
        for c, sig in zip(range(-1, 4), wp_plus):
            m.d.comb += sig.eq(wp[5:8] + c)
        lb_slot = Signal(3)     # slot of the packet's newest byte (mod 8)
        ceil_slot = Signal(3)   # first slot after it
        with m.Switch(Cat(rel_end[5:7], nz)):
            for hi2 in range(3):
                for n in range(2):
                    with m.Case(hi2 | (n << 2)):
                        m.d.comb += [lb_slot.eq(wp_plus[hi2 + n]),
                                     ceil_slot.eq(wp_plus[hi2 + n + 1])]
        has_bytes = Signal()    # the packet has bytes once this vector is in
        m.d.comb += has_bytes.eq(pkt_bytes | (length != 0))

        wp_next = Signal(8)
        rel_next = Signal(3)
        rel_upd = Signal()
        mark_last = Signal()
        with m.If(vin.last):
            # Round up to the next slot: the next packet starts on a fresh beat.
            m.d.comb += [mark_last.eq(has_bytes), rel_upd.eq(has_bytes),
                         rel_next.eq(ceil_slot)]
            with m.If(has_bytes):
                m.d.comb += wp_next.eq(Cat(C(0, 5), ceil_slot))
            with m.Else():
                m.d.comb += wp_next.eq(wp)
        with m.Else():
            m.d.comb += [wp_next.eq(Cat(rel_end[0:5], wp[5:8] + rel_end[5:7])),
                         rel_upd.eq(length != 0), rel_next.eq(lb_slot)]

        # Byte i < 32 of the vector goes to lane (i + off) mod 32 of relative slot
        # (i + off) div 32: rotating bytes 0..31 by `off` puts each in its lane.
        lo = rotate_bytes_left(m, vin.data[:8 * BEAT_BYTES], off, BEAT_BYTES, name="rot_lo",
                               cut=True)
        # A fill vector starts on a slot boundary (off = 0): its word lands unrotated.
        word = vin.data[:32]
        lo = Mux(vin.fill, word.replicate(BEAT_BYTES // 4), lo)
        hi = Mux(vin.fill, word[:16], vin.data[8 * BEAT_BYTES:])

        a_valid = Signal()
        a_lo = Signal(8 * BEAT_BYTES, reset_less=True)
        a_hi = Signal(16, reset_less=True)                      # bytes 32, 33
        a_hv0 = Signal(reset_less=True)         # byte 32 is there
        a_hv1 = Signal(reset_less=True)         # byte 33 is there, in the same slot
        a_hv1w = Signal(reset_less=True)        # byte 33 is there, in the next slot (off 31)
        a_off = Signal(5, reset_less=True)
        a_slot = Signal(2, reset_less=True)                     # first slot
        a_start = Signal(BEAT_BYTES, reset_less=True)           # window bytes j >= off
        # Window byte 32q + t is below the end (off + length) iff q < end div 32, or
        # q = end div 32 and t < end mod 32: kept as those two parts (32 + 2 flip-flops
        # instead of a 64-bit thermometer; the write enables use them as they are).
        a_end_t = Signal(BEAT_BYTES, reset_less=True)           # lanes t < end mod 32
        a_end_q = Signal(2, reset_less=True)                    # end div 32 (0..2)
        a_rel_upd = Signal()
        a_rel = Signal(3, reset_less=True)
        a_mark = Signal()
        a_last_slot = Signal(2, reset_less=True)
        a_end_lane = Signal(5, reset_less=True)     # rel_end mod 32
        a_nz = Signal(reset_less=True)

        m.d.sync += a_valid.eq(accept)
        with m.If(accept):
            m.d.sync += [
                wp.eq(wp_next),
                wp_neg.eq(Mux(vin.last & has_bytes, 0, wp_neg - length[0:5])),
                pkt_bytes.eq(has_bytes & ~vin.last),
                a_lo.eq(lo),
                a_hi.eq(hi),
                a_hv0.eq(length > BEAT_BYTES),
                a_hv1.eq((length > BEAT_BYTES + 1) & (off != BEAT_BYTES - 1)),
                a_hv1w.eq((length > BEAT_BYTES + 1) & (off == BEAT_BYTES - 1)),
                a_off.eq(off),
                a_slot.eq(wp[5:7]),
                a_start.eq(Cat(*(off <= j for j in range(BEAT_BYTES)))),
                a_end_t.eq(Cat(*(rel_end[0:5] > t for t in range(BEAT_BYTES)))),
                a_end_q.eq(rel_end[5:7]),
                a_rel_upd.eq(rel_upd),
                a_rel.eq(rel_next),
                a_mark.eq(mark_last),
                a_last_slot.eq(lb_slot[0:2]),
                a_end_lane.eq(rel_end[0:5]),
                a_nz.eq(nz),
            ]

        # ---- write (stage B) ---------------------------------------------------------
        # Valid bytes of the final slot: lanes up to the newest byte's (decoded here, not
        # behind stage A's adder).
        a_keep = Signal(BEAT_BYTES)
        m.d.comb += a_keep.eq(Cat(*(~a_nz | (a_end_lane > b) for b in range(BEAT_BYTES))))
        # Lane b of relative slot 0 holds vector byte b - off (lanes >= off); of slot 1,
        # byte 32 + b - off (bytes 32, 33 at lanes off, off + 1: the store's). So lane
        # b's rotated byte goes to relative slot below[b]. below is ~a_start, a
        # register, so the memories' write addresses are one LUT behind flip-flops.
        below = Signal(BEAT_BYTES)      # lane b < off
        m.d.comb += below.eq(~a_start)
        # Byte enables over the 2-slot window: lanes >= off of slot 0, all of slot 1,
        # below the end.
        wen = Signal(WINDOW * BEAT_BYTES)
        for q in range(WINDOW):
            for t in range(BEAT_BYTES):
                below_end = (a_end_q > q) | ((a_end_q == q) & a_end_t[t])
                m.d.comb += wen[BEAT_BYTES * q + t].eq(below_end & (a_start[t] if q == 0 else 1))
        for b in range(BEAT_BYTES):
            lane = slice(8 * b, 8 * b + 8)
            lo_w = lo_mem[b][0]
            m.d.comb += [
                lo_w.addr.eq(a_slot + below[b]), lo_w.data.eq(a_lo[lane]),
                lo_w.en.eq(a_valid & Mux(below[b], wen[BEAT_BYTES + b], wen[b])),
            ]
        # Bytes 32, 33 into the store of the slot after the first (byte 33 into the one
        # after that when off is 31; that slot's first byte); a slot's flags are cleared
        # as it is read (never a slot written in the same clock: the read slot is
        # released, the written ones are not).
        x_s1 = (a_slot + 1)[:2]
        x_s2 = (a_slot + 2)[:2]
        for s in range(SLOTS):
            set1 = a_valid & a_hv0 & (x_s1 == s)
            set2 = a_valid & a_hv1w & (x_s2 == s)
            with m.If(emit & (rd == s)):
                m.d.sync += [xv0[s].eq(0), xv1[s].eq(0)]
            with m.If(set1 | set2):
                m.d.sync += [xs[s].eq(a_off), x0[s].eq(a_hi[:8]), x1[s].eq(a_hi[8:]),
                             xv0[s].eq(set1), xv1[s].eq(Mux(set1, a_hv1, 1))]
        with m.If(a_valid):
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
        if platform == "formal":
            # The ring's state, asserted for the liveness induction: at most RING bytes
            # held, none with an open packet's bytes; wp_neg = -wp mod 32; wp on a slot
            # boundary unless a packet's bytes are open; rel (as stage B leaves it) the
            # slot of the open packet's newest byte, else wp's; the slots marked last in
            # [rp, rel), a pending mark on the slot before its rel.
            held = Signal(3)
            rel_b = Signal(3)
            newest = Signal(8)
            m.d.comb += [held.eq(wp[5:8] - rp), newest.eq(wp - 1),
                         rel_b.eq(Mux(a_valid & a_rel_upd, a_rel, rel))]
            r_d, b_d = (rel - rp)[:3], (rel_b - rp)[:3]
            m.d.comb += [
                Assert((held < SLOTS) | ((held == SLOTS) & (wp[0:5] == 0)), "au: ring over-full"),
                Assert(~pkt_bytes | (held != 0) | (wp[0:5] != 0), "au: open bytes not held"),
                Assert(wp_neg == (0 - wp[0:5])[:5], "au: wp_neg is not -wp"),
                Assert(pkt_bytes | (wp[0:5] == 0), "au: wp inside a slot between packets"),
                Assert(rel_b == Mux(pkt_bytes, newest[5:8], wp[5:8]), "au: rel out of step"),
                Assert((r_d <= b_d) & (b_d <= held), "au: rel outside [rp, wp]"),
                Assert(~(a_valid & a_mark) | (a_rel_upd & (a_last_slot == (a_rel - 1)[:2]) &
                                               (b_d != 0) & ~slot_last.bit_select(a_last_slot, 1)),
                       "au: pending last mark"),
            ]
            for sl in range(SLOTS):
                with m.If(slot_last[sl]):
                    m.d.comb += Assert((C(sl, 2) - rp[0:2])[:2] < r_d, "au: last mark outside [rp, rel)")
            m.d.comb += [self.formal_lasts.eq(sum(slot_last[sl] for sl in range(SLOTS)) +
                                              (a_valid & a_mark)),
                         self.formal_bytes.eq(pkt_bytes)]
        return m
