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

Pipeline: an input register slice (a FifoSlice: entries in distributed RAM; it also
carries the beat's byte count); stage 1
registers each beat taken rotated down by ``(skip - insert) mod 16`` bytes, so that it
and the beat before it (kept one advance longer) form the window {previous, current},
and the byte count of the output beat; stage 2 picks each output byte from one of four
bytes of that window and registers the output beat. Both stages move together
(``advance = ~o.valid | o.ready``); ``i.ready`` is the input slice's, a flip-flop. The output ``data``
has no reset value (it is only meaningful with ``valid``).
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import axis_signature
from .wire import BEAT_BITS, BEAT_BYTES
from .primitives import FifoSlice, greater_than, keep_count

__all__ = ["Realigner", "realigner_cfg"]


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
        # decision (and the cfg reload behind it) then starts from flip-flops. It carries
        # no `keep`: only the byte count is read.
        m.submodules.in_rs = in_rs = FifoSlice(
            data.StructLayout({"data": B, "last": 1, "user": 1, "nb": 6}))
        m.d.comb += [
            in_rs.i.valid.eq(self.i.valid), self.i.ready.eq(in_rs.i.ready),
            in_rs.i.payload.data.eq(self.i.payload.data),
            in_rs.i.payload.last.eq(self.i.payload.last),
            in_rs.i.payload.user.eq(self.i.payload.user),
            in_rs.i.payload.nb.eq(Mux(self.i.payload.last, keep_count(self.i.payload.keep),
                                      BEAT_BYTES)),
        ]

        class _In:      # the registered input, under the names the logic below uses
            valid = in_rs.o.valid
            payload = in_rs.o.payload
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
        pz = Signal()           # the previous beat (rc below) reads as zeros

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
            i.ready.eq(advance & ((active & ~flush) | nxt_ok)),
            # advance last: in an engine o.ready (hence advance) may come through logic
            take.eq(i.valid & active & ~flush & advance),
            take_next.eq(i.valid & (flush | ~active) & nxt_ok & advance),
        ]
        nb = Signal(6)  # valid bytes of this input beat
        m.d.comb += nb.eq(in_rs.o.payload.nb)

        # Stage-1 registers.
        s1_valid = Signal()
        s1_off = Signal(5)
        s1_pz = Signal()        # the window's low half {prev} is zeros
        s1_cz = Signal()        # its high half {current beat} is zeros (a flush beat)
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
        # beat): a compare of two registers, off any adder, in two LUT levels.
        last_le_off = Signal()
        m.d.comb += last_le_off.eq(~greater_than(nb, off))
        flush_bytes = Signal(6)
        m.d.comb += flush_bytes.eq(Mux(fz | (fa <= 0), 0, Mux(fa < fb, fa, fb)))

        frame_end = Signal()    # the frame is finished this cycle (its state may reload)
        is_last_out = Signal()  # a beat produced now is the frame's last output beat
        m.d.comb += is_last_out.eq(rem_le32 | last_le_off)
        end_here = Signal()     # ... on this input beat, if it is taken
        m.d.comb += end_here.eq(i.payload.last & (out_done | (producing & is_last_out)))

        def skipped_last(on_this):
            # Input ended while still skipping: the output is the part of this beat past
            # `off` (owed as a flush beat, see `flush` below), or empty (one keep = 0
            # beat).
            return [pz.eq(~on_this)]

        # A flush beat is owed after a last input beat taken while skipping (of this
        # frame or, as its cfg loads, of the next one), or producing with bytes left
        # past lane `off`; it goes out in the next advance. As one select by advance.
        flush_set = Signal()
        m.d.comb += flush_set.eq(i.valid & i.payload.last & (
            (active & ~flush & ~out_done & ~(producing & is_last_out))
            | ((flush | ~active) & nxt_ok)))
        with m.If(advance):
            m.d.sync += flush.eq(flush_set)

        # The flush beat's operands are stored on every last input beat taken, whether
        # a flush beat is owed or not (they are only read in a flush clock, and a beat
        # is taken in a flush clock only for the next frame): so they hang off the
        # handshake and a few registers, not off the frame-end decision.
        nxt_side = Signal()     # a beat taken now belongs to the next frame (take_next)
        m.d.comb += nxt_side.eq(flush | ~active)
        with m.If((take | take_next) & i.payload.last):
            m.d.sync += [
                flush_user.eq(i.payload.user),
                fa.eq(Mux(nxt_side, nb - nxt_off, tail_avail)),
                # producing: the beat's first 32 - off bytes go out now, the rest later
                fb.eq(Mux(nxt_side, nxt_rem, Mux(producing, rem - BEAT_BYTES, rem))),
                fz.eq(Mux(nxt_side, ~nxt_skip1, ~producing & (skipb != 1))),
            ]

        with m.If(advance):
            m.d.sync += s1_valid.eq(0)

        with m.If(flush & advance):
            # Owed beat: window {0, prev}.
            m.d.sync += [
                s1_valid.eq(1), s1_pz.eq(pz), s1_cz.eq(1), s1_off.eq(off),
                s1_bytes.eq(flush_bytes), s1_last.eq(1), s1_user.eq(flush_user),
            ]
            m.d.comb += frame_end.eq(1)
        with m.Elif(take):
            m.d.sync += pz.eq(0)
            with m.If(~producing):
                m.d.sync += [skipb.eq(skipb - 1), producing.eq(skipb == 1)]
            with m.If(~out_done & producing):
                m.d.sync += [
                    s1_valid.eq(1), s1_pz.eq(pz), s1_cz.eq(0), s1_off.eq(off),
                    s1_bytes.eq(here), s1_last.eq(is_last_out),
                    s1_user.eq(i.payload.user & i.payload.last),
                    rem.eq(rem - BEAT_BYTES),
                    rem_le32.eq(rem_le64), rem_le64.eq(rem <= 3 * BEAT_BYTES),
                    rem_cap.eq(Mux(rem_le64, (rem - BEAT_BYTES)[:6], BEAT_BYTES)),
                ]
                with m.If(is_last_out):
                    m.d.sync += out_done.eq(1)
            with m.Elif(~out_done & i.payload.last):
                m.d.sync += skipped_last(skipb == 1)
            # The frame ends here unless a flush beat is owed (decided above); from
            # registers and nb, ANDed with take last.
            with m.If(end_here):
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
                pz.eq(1), nxt_valid.eq(0),
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
            m.d.sync += [pz.eq(0), skipb.eq(nxt_skipb - 1),
                         producing.eq(nxt_skip1)]
            with m.If(i.payload.last):
                m.d.sync += skipped_last(nxt_skip1)

        # --- Beats are kept rotated: rc is the last beat taken, rotated down by l =
        # off mod 16 bytes (rc[k] = beat[(k + l) mod 32]), with the offset of the frame
        # that beat belongs to (the next frame's when its first beat is taken as its cfg
        # loads); rp is rc one advance later, i.e. the window's previous beat at stage 2.
        # Two radix-4 byte rotations, each one LUT6 level (2 select bits + 4 data bits).
        # The rotation of a beat taken now is Mux(flush | ~active, nxt_off, off) (a
        # take_next happens only then, a take never); it is kept in a register `amt`
        # (the selects must come from flip-flops for one LUT per radix-4 stage), loaded
        # with that expression's next value: after a take, flush | ~active holds iff
        # the beat was a last one; otherwise flush and active only change with a load,
        # after which the value is the old nxt_off either way.
        amt = Signal(4)
        amt_next_sel = Signal()
        m.d.comb += amt_next_sel.eq(~(active & ~flush) | (i.valid & advance & i.payload.last))
        m.d.sync += amt.eq(Mux(amt_next_sel, Mux(cfg.valid & cfg.ready, d[:4], nxt_off[:4]),
                               off[:4]))
        # AND-OR over a decoded select (nested 2:1 muxes share halves between
        # neighbouring bytes and map to two LUT levels per stage).
        def rotate4(x, sel, step):
            dec = [(sel == k).replicate(B) for k in range(4)]
            return ((dec[0] & x) | (dec[1] & x.rotate_right(8 * step))
                    | (dec[2] & x.rotate_right(16 * step)) | (dec[3] & x.rotate_right(24 * step)))
        rot_a = Signal(B)
        m.d.comb += rot_a.eq(rotate4(i.payload.data, amt[:2], 1))
        rot = Signal(B)
        m.d.comb += rot.eq(rotate4(rot_a, amt[2:], 4))
        rc = Signal(B)
        rp = Signal(B)
        with m.If(take | take_next):
            m.d.sync += rc.eq(rot)
        with m.If(advance):
            m.d.sync += rp.eq(rc)

        # --- Stage 2: out[j] = window[j + off]. With off = 16h + l, that is byte
        # (j + 16h) mod 32 of rp (if j + off < 32) or of rc: one 4:1 select per bit.
        # Bytes past the count, or from a half that reads as zeros, are the output
        # flip-flops' synchronous reset (hence no reset value of their own: that would
        # take a LUT per byte and a level).
        # The keep mask as a table of s1_bytes (one LUT6 per bit; compares ripple).
        keep_mask = Signal(BEAT_BYTES)
        with m.Switch(s1_bytes):
            for v in range(BEAT_BYTES):
                with m.Case(v):
                    m.d.comb += keep_mask.eq((1 << v) - 1)
            with m.Default():
                m.d.comb += keep_mask.eq(~0)
        h = s1_off[4]
        o_bytes = []
        for j in range(BEAT_BYTES):
            cur = Signal(name=f"cur{j}")        # window byte j + off is in the current beat
            m.d.comb += cur.eq(s1_off >= BEAT_BYTES - j)
            zero = Signal(name=f"zero{j}")
            m.d.comb += zero.eq(~keep_mask[j] | Mux(cur, s1_cz, s1_pz))
            src = Signal(8, name=f"src{j}")
            j2 = j ^ 16
            with m.Switch(Cat(h, cur)):
                for c, (reg, k) in enumerate([(rp, j), (rp, j2), (rc, j), (rc, j2)]):
                    with m.Case(c):
                        m.d.comb += src.eq(reg[8 * k: 8 * k + 8])
            ob = Signal(8, name=f"o_byte{j}", reset_less=True)
            with m.If(advance):
                m.d.sync += ob.eq(Mux(zero, 0, src))
            o_bytes.append(ob)
        m.d.comb += o.payload.data.eq(Cat(*o_bytes))
        with m.If(advance):
            m.d.sync += [
                o_valid.eq(s1_valid),
                o.payload.keep.eq(keep_mask),
                o.payload.last.eq(s1_last),
                o.payload.user.eq(s1_user),
            ]
        return m
