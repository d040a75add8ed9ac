"""Realigner: moves a frame's bytes to new byte lanes (per-frame offset), 1 beat/clock.

Shared by the TX and RX engines. For each input frame it produces

    out[j] = in[j + skip - insert]   (0 where that index is negative),  0 <= j < length

i.e. the frame moved by ``skip - insert`` bytes (left: bytes dropped; right: zero
bytes inserted in front), cut to ``length`` bytes,

as a stream of full 32-byte beats, the last one partial (``keep`` a contiguous low
mask) with ``last``. TX uses it with ``skip = P`` to pull the L4 payload out of a frame
(``length = L`` drops Ethernet padding); RX with ``insert = P mod 32`` to put restored
bytes on the byte lanes they take in the output frame.

Rules:
- Each frame needs one ``cfg`` entry; frames and cfg entries pair up in order. One
  entry is decoded ahead into a holding register, so frames of two or more beats follow
  each other with no idle clock.
- Every input beat of the frame is consumed, also those past the output's end.
- If the input ends before ``length`` output bytes exist, the output is shorter.
- A frame whose output would be empty yields one beat with ``keep = 0`` and ``last``.
- ``user`` of the output's last beat is the input's ``user`` when the output ends on
  (or after) the input's last beat, else 0.
- The input's ``keep`` is only read on its last beat (a frame's other beats are full).

Pipeline: an input register slice (which also counts the beat's bytes); stage 1
registers the 64-byte window {current beat, previous beat} and the
byte count of the output beat; stage 2 registers the shifted beat. Both stages move
together (``advance = ~o.valid | o.ready``), so ``i.ready`` follows ``o.ready`` through
a few gates: put an AxisRegisterSlice after it if that path gets long.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisBeat, AxisRegisterSlice, BEAT_BITS, BEAT_BYTES, axis_signature

__all__ = ["Realigner", "realigner_cfg", "keep_count"]


def keep_count(keep):
    """Number of set bits of a contiguous low ``keep`` mask (a thermometer code), as XOR
    trees: bit b of the count is the parity of keep[2^b - 1], keep[2^(b+1) - 1 + 2^b]...
    (two LUT levels instead of a popcount adder tree)."""
    n = len(keep)
    bits = []
    b = 0
    while (1 << b) <= n:
        step = 1 << b
        taps = [keep[i] for i in range(step - 1, n, step)]
        x = taps[0]
        for t in taps[1:]:
            x = x ^ t
        bits.append(x)
        b += 1
    return Cat(*bits)


def realigner_cfg(skip_bits=8, length_bits=16):
    return data.StructLayout({"skip": skip_bits, "insert": 5, "length": length_bits})


class Realigner(wiring.Component):
    def __init__(self, skip_bits=8, length_bits=16):
        self._skip_bits = skip_bits
        self._length_bits = length_bits
        super().__init__({
            "cfg": In(stream.Signature(realigner_cfg(skip_bits, length_bits))),
            "i": In(axis_signature()),
            "o": Out(axis_signature()),
        })

    def elaborate(self, platform):
        m = Module()
        B = BEAT_BITS
        o, cfg = self.o, self.cfg

        # Input register slice that also registers the beat's byte count: the frame-end
        # decision (and the cfg reload behind it) then starts from flip-flops.
        m.submodules.in_rs = in_rs = AxisRegisterSlice(
            data.StructLayout({"beat": AxisBeat, "nb": 6}))
        m.d.comb += [
            in_rs.i.valid.eq(self.i.valid), self.i.ready.eq(in_rs.i.ready),
            in_rs.i.payload.beat.eq(self.i.payload),
            in_rs.i.payload.nb.eq(Mux(self.i.payload.last, keep_count(self.i.payload.keep),
                                      BEAT_BYTES)),
        ]

        class _In:      # the registered input, under the names the logic below uses
            valid = in_rs.o.valid
            payload = in_rs.o.payload.beat
            ready = Signal(name="in_ready")
        i = _In
        m.d.comb += in_rs.o.ready.eq(i.ready)

        advance = Signal()
        o_valid = Signal()
        m.d.comb += [advance.eq(~o_valid | o.ready), o.valid.eq(o_valid)]

        # --- per-frame state
        active = Signal()       # a cfg is loaded for the frame in progress
        skipb = Signal(range(2 ** self._skip_bits // BEAT_BYTES + 2))  # beats still to skip (D+1)
        off = Signal(5)         # o = (skip - insert) mod 32
        rem = Signal(self._length_bits + 1)   # output bytes still allowed
        out_done = Signal()     # output finished; discard the rest of the input
        flush = Signal()        # one more output beat from {0, prev} is owed
        # The owed beat's byte count is min(fa, fb) (0 if fz or fa <= 0), worked out in
        # the flush clock itself from these registers, so the frame-end clock only
        # stores operands (no subtract-compare-select chain behind the end decision).
        fa = Signal(signed(7))
        fb = Signal(self._length_bits + 1)
        fz = Signal()
        flush_user = Signal()
        prev = Signal(B)

        # The next frame's cfg, decoded ahead so that frames follow with no bubble.
        nxt_valid = Signal()
        nxt_skipb = Signal.like(skipb)
        nxt_off = Signal(5)
        nxt_rem = Signal.like(rem)
        # rem <= 32 / <= 64 kept as flags beside rem (the frame-end decision reads them),
        # and min(rem, 32) as a register of its own.
        rem_le32, rem_le64 = Signal(), Signal()
        nxt_le32, nxt_le64 = Signal(), Signal()
        rem_cap = Signal(6)
        nxt_cap = Signal(6)
        # skipb == 0 as a flag, and 32 - off (the output bytes a beat yields before the
        # input's last beat cuts it short).
        producing = Signal()
        off_c = Signal(6)
        nxt_off_c = Signal(6)
        nxt_skip0 = Signal()    # nxt_skipb == 0 (insert > skip: output from the first beat)
        nxt_skip1 = Signal()    # nxt_skipb == 1

        # In the clock the next frame's cfg loads (a flush clock, or the clock after a
        # frame ended on an input beat), the next frame's first beat is taken if that
        # frame only skips it (it produces no output): this keeps one beat per clock.
        take = Signal()
        take_next = Signal()    # the beat taken belongs to the next frame (loaded now)
        nxt_ok = Signal()       # that beat can be taken: it is one the next frame skips
        m.d.comb += [
            nxt_ok.eq(nxt_valid & ~nxt_skip0),      # nxt_skipb != 0
            i.ready.eq(advance & ((active & ~flush) | ((flush | ~active) & nxt_ok))),
            take.eq(i.valid & i.ready & active & ~flush),
            take_next.eq(i.valid & i.ready & (flush | ~active)),
        ]
        nb = Signal(6)  # valid bytes of this input beat
        m.d.comb += nb.eq(in_rs.o.payload.nb)

        # Stage-1 registers.
        s1_valid = Signal()
        s1_win = Signal(2 * B)
        s1_off = Signal(5)
        s1_bytes = Signal(6)
        s1_last = Signal()
        s1_user = Signal()

        # Output byte count of a beat produced now: min(32, rem, 32 + nb - o).
        avail = Signal(7)
        m.d.comb += avail.eq(nb + off_c)
        here = Signal(6)
        m.d.comb += here.eq(Mux(avail < rem_cap, avail, rem_cap))
        # After the input's last beat, the bytes left for a flush beat: min(rem - 32, nb - o).
        tail_avail = Signal(signed(7))
        m.d.comb += tail_avail.eq(nb - off)
        # The input's last beat ends at or before lane `off` (nb is only < 32 on a last
        # beat): a compare of two registers, off any adder.
        last_le_off = Signal()
        m.d.comb += last_le_off.eq(nb <= off)
        flush_bytes = Signal(6)
        m.d.comb += flush_bytes.eq(Mux(fz | (fa <= 0), 0, Mux(fa < fb, fa, fb)))

        frame_end = Signal()    # the frame is finished this cycle (its state may reload)

        def skipped_last(on_this, tavail, rem_):
            # Input ended while still skipping: the output is the part of this beat past
            # `off` (owed as a flush beat), or empty (one keep = 0 beat).
            return [
                flush.eq(1), flush_user.eq(i.payload.user),
                fa.eq(tavail), fb.eq(rem_), fz.eq(~on_this),
                prev.eq(Mux(on_this, i.payload.data, 0)),
            ]

        with m.If(advance):
            m.d.sync += s1_valid.eq(0)

        with m.If(flush & advance):
            # Owed beat: window {0, prev}.
            m.d.sync += [
                s1_valid.eq(1), s1_win.eq(Cat(prev, C(0, B))), s1_off.eq(off),
                s1_bytes.eq(flush_bytes), s1_last.eq(1), s1_user.eq(flush_user),
                flush.eq(0),
            ]
            m.d.comb += frame_end.eq(1)
        with m.Elif(take):
            m.d.sync += prev.eq(i.payload.data)
            with m.If(~producing):
                m.d.sync += [skipb.eq(skipb - 1), producing.eq(skipb == 1)]
            with m.If(~out_done & producing):
                is_last_out = Signal()
                m.d.comb += is_last_out.eq(rem_le32 | last_le_off)
                m.d.sync += [
                    s1_valid.eq(1), s1_win.eq(Cat(prev, i.payload.data)), s1_off.eq(off),
                    s1_bytes.eq(here), s1_last.eq(is_last_out),
                    s1_user.eq(i.payload.user & i.payload.last),
                    rem.eq(rem - BEAT_BYTES),
                    rem_le32.eq(rem_le64), rem_le64.eq(rem <= 3 * BEAT_BYTES),
                    rem_cap.eq(Mux(rem_le64, (rem - BEAT_BYTES)[:6], BEAT_BYTES)),
                ]
                with m.If(is_last_out):
                    m.d.sync += out_done.eq(1)
                with m.Elif(i.payload.last):
                    # Bytes of this beat past lane `off` go into one more output beat.
                    m.d.sync += [
                        flush.eq(1), flush_user.eq(i.payload.user),
                        fa.eq(tail_avail), fb.eq(rem - BEAT_BYTES), fz.eq(0),
                    ]
            with m.Elif(~out_done & i.payload.last):
                m.d.sync += skipped_last(skipb == 1, tail_avail, rem)
            with m.If(i.payload.last):
                # The frame ends here unless a flush beat is owed (decided above).
                owe = Signal()
                m.d.comb += owe.eq(~out_done & ~(producing & (rem_le32 | last_le_off)))
                with m.If(~owe):
                    m.d.comb += frame_end.eq(1)

        # Decode cfg into the `nxt` register; move it to the current frame when idle or
        # as the current frame ends.
        d = Signal(signed(self._skip_bits + 2))
        m.d.comb += d.eq(cfg.payload.skip - cfg.payload.insert)
        load = Signal()
        m.d.comb += [
            # Not from frame_end (a deep signal): a frame that ends on an input beat
            # frees `active`, and the next frame loads on the following clock, whose
            # first beat (a skipped one) is taken in that same clock.
            load.eq(nxt_valid & (~active | (flush & advance))),
            # Only from a register (not from this frame's end): keeps the ready path of
            # whoever feeds cfg short; nxt refills one clock after it moves on.
            cfg.ready.eq(~nxt_valid),
        ]
        with m.If(frame_end):
            m.d.sync += active.eq(0)
        with m.If(load):
            m.d.sync += [
                active.eq(1), out_done.eq(0), skipb.eq(nxt_skipb), off.eq(nxt_off),
                rem.eq(nxt_rem), rem_le32.eq(nxt_le32), rem_le64.eq(nxt_le64),
                rem_cap.eq(nxt_cap), off_c.eq(nxt_off_c), producing.eq(nxt_skip0),
                prev.eq(0), nxt_valid.eq(0),
            ]
        with m.If(cfg.valid & cfg.ready):
            m.d.sync += [
                nxt_valid.eq(1), nxt_skipb.eq((d >> 5) + 1), nxt_off.eq(d[:5]),
                nxt_rem.eq(cfg.payload.length),
                nxt_le32.eq(cfg.payload.length <= BEAT_BYTES),
                nxt_le64.eq(cfg.payload.length <= 2 * BEAT_BYTES),
                nxt_cap.eq(Mux(cfg.payload.length < BEAT_BYTES, cfg.payload.length, BEAT_BYTES)),
                nxt_off_c.eq(BEAT_BYTES - d[:5]),
                nxt_skip0.eq(d < 0),
                nxt_skip1.eq((d >> 5) == 0),
            ]

        # The next frame's first beat taken as its cfg loads (always a skipped beat):
        # applied on top of the load above.
        with m.If(take_next):
            m.d.sync += [prev.eq(i.payload.data), skipb.eq(nxt_skipb - 1),
                         producing.eq(nxt_skip1)]
            with m.If(i.payload.last):
                ntail = Signal(signed(7))
                m.d.comb += ntail.eq(nb - nxt_off)
                m.d.sync += skipped_last(nxt_skip1, ntail, nxt_rem)

        # --- Stage 2: shift the window and register the output beat.
        keep_mask = Signal(BEAT_BYTES)
        for j in range(BEAT_BYTES):
            m.d.comb += keep_mask[j].eq(s1_bytes > j)
        # shifted byte j = window byte j + off, in two radix stages (a 4:1 mux by off[0:2],
        # then an 8:1 mux by off[2:5]): wide LUT6/MUXF7 muxes, not a 64-byte barrel shift.
        nA = BEAT_BYTES + 28
        stage_a = Signal(8 * nA)
        with m.Switch(s1_off[:2]):
            for c in range(4):
                with m.Case(c):
                    m.d.comb += stage_a.eq(s1_win[8 * c: 8 * (c + nA)])
        shifted = Signal(B)
        with m.Switch(s1_off[2:]):
            for c in range(8):
                with m.Case(c):
                    m.d.comb += shifted.eq(stage_a[32 * c: 32 * c + B])
        with m.If(advance):
            m.d.sync += [
                o_valid.eq(s1_valid),
                o.payload.data.eq(shifted & Cat(*(keep_mask[j].replicate(8) for j in range(BEAT_BYTES)))),
                o.payload.keep.eq(keep_mask),
                o.payload.last.eq(s1_last),
                o.payload.user.eq(s1_user),
            ]
        return m
