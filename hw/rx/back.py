"""RX back half: which beat goes out next, for a bypassed or a decompressed frame."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import axis_signature
from ..wire import BEAT_BYTES, MAX_FRAME_BYTES
from .layouts import HOLD_BEATS, FeedBack, FrontBack, HoldBack, OutCtl

__all__ = ["Back"]


class Back(wiring.Component):
    """Loads the pending frame (``front.pend``, once ``pend_ready``) and sequences its output
    beats on ``o`` (what the egress makes of each beat): a bypassed frame's held beats,
    then, if it was not held in full, the rest of it live from the input (``hold.beat``,
    while the front half is in PASS, ``front.f_pass``); a decompressed frame's header beats,
    then the Realigner's beats (``words``) merged with the header beat that holds byte P,
    the last one once the end-of-input slot (``feed.fin``) is valid. ``front.release`` frees the
    pending slot as soon as its header is no longer needed (the last held beat, or the
    beat holding byte P goes out), so the front half's next frame can be taken while
    this one is still going out.

    The state is one-hot flags and every count, "last beat", "header beat" and the last
    beat's tkeep is a register loaded from the slot, so the handshake per state is one
    flat AND of flags. Combinational contract: ``o.valid`` and ``words.ready`` follow
    ``o.ready`` (the output slice's, a register) and ``hold.beat_valid`` in the same clock;
    ``hold.pass_take`` (the input's ready in PASS), ``front.release``, ``end_live`` (PASS
    ends) and ``feed.fin_clear`` (the end-of-input slot is read) are strobes of the output handshake.
    """

    front: In(FrontBack)
    hold: In(HoldBack)
    feed: In(FeedBack)
    words: In(axis_signature())
    o: Out(stream.Signature(OutCtl))
    malformed: Out(32)

    def __init__(self):
        super().__init__()
        # Driven only when elaborated for formal checks (platform "formal"): the frames
        # the back half holds, which its check relates to the slot's model (induction).
        self.formal_open = Signal()    # the slot's frame going out, slot not released yet
        self.formal_after = Signal()   # a frame going out after releasing the slot
        self.formal_frame = Signal()   # a decompressed frame going out
        self.formal_live = Signal()    # PASS: the rest of a bypass from the input (or
                                       # its held beats, PASS to follow)

    def elaborate(self, platform):
        m = Module()
        front, hold, fin = self.front, self.hold, self.feed.fin
        pend, inb, rl_o, ob = front.pend, hold.beat, self.words, self.o
        f_pass, fin_valid = front.f_pass, fin.valid
        b_idle = Signal(init=1)
        b_held = Signal()              # bypass: the held beats
        b_live = Signal()              # bypass: the rest of the frame from the input
        b_frame = Signal()             # decompressed frame

        o_idx = Signal(range(HOLD_BEATS + 1))     # header / held beat being emitted
        o_nheld = Signal(range(HOLD_BEATS + 1))
        o_end_held = Signal()                      # o_idx + 1 == o_nheld, as a register
        o_held_last = Signal()
        o_held_user = Signal()
        o_hleft = Signal(range(HOLD_BEATS + 1))   # header beats before the one holding P
        o_first = Signal()                         # next data beat holds byte P
        o_left = Signal(range(MAX_FRAME_BYTES // BEAT_BYTES + 2))   # beats left, incl. this
        o_low = Signal(BEAT_BYTES)                 # bytes below P mod 32
        o_last_keep = Signal(BEAT_BYTES)           # the last beat's keep (either kind)
        o_last = Signal()                          # this beat is the frame's last
        o_hdr = Signal()                           # o_hleft != 0, as a register
        o_bank = Signal()                          # the beat memory's bank of the frame
        # The restored fields go onto their lanes as the header beats go out: the IP
        # total length and checksum in beat 0 (lanes by the VLAN tag), the UDP length
        # in beat 1 or 2 at lane 2 + 4t (by VLAN and IHL). Kept as flags for the beat
        # now out, only ever set for a decompressed frame.
        o_tc = Signal(2)                           # beat 0 now, without / with VLAN tag
        o_umask = Signal(BEAT_BYTES // 4)          # the UDP length's lane (one-hot t)
        o_ub2 = Signal()                           # ... is in beat 2, not beat 1
        o_unow = Signal()                          # ... and that beat is the one now out

        # The output handshake per state, each one flat over flags.
        hs_held = Signal()
        hs_live = Signal()
        hs_frame = Signal()
        bad = Signal()
        frame_ok = Signal()            # FRAME has a beat (a header beat or a data beat)
        c = ob.payload
        m.d.comb += [
            frame_ok.eq(b_frame & (o_hdr | rl_o.valid) & (~o_last | fin_valid)),
            ob.valid.eq(b_held | (b_live & f_pass & hold.beat_valid) | frame_ok),
            hs_held.eq(b_held & ob.ready),
            hs_live.eq(b_live & f_pass & hold.beat_valid & ob.ready),
            hs_frame.eq(frame_ok & ob.ready),
            bad.eq(rl_o.payload.user | fin.trunc),
            c.live.eq(b_live), c.held.eq(b_held), c.hdr.eq(o_hdr), c.first.eq(o_first),
            c.low.eq(o_low), c.idx.eq(o_idx[:3]), c.bank.eq(o_bank), c.tc.eq(o_tc),
            c.umask.eq(o_umask), c.unow.eq(o_unow), c.last.eq(o_last),
            c.last_keep.eq(o_last_keep), c.held_user.eq(o_held_user), c.bad.eq(bad),
            c.fin_bad.eq(fin.bad),
            c.beat.data.eq(inb.data), c.beat.keep.eq(inb.keep), c.beat.last.eq(inb.last),
            c.beat.user.eq(inb.user),
            c.d.eq(rl_o.payload.data),
            hold.pass_take.eq(b_live & f_pass & ob.ready),
        ]

        # The Realigner's ready from flip-flops only (it reaches into its pipeline).
        m.d.comb += rl_o.ready.eq(b_frame & ~o_hdr & (~o_last | fin_valid) & ob.ready)

        end_held = Signal()            # the last held beat goes out
        end_live = Signal()            # the live bypass frame's last beat goes out
        end_frame = Signal()           # the decompressed frame's last beat goes out
        releasing = Signal()           # FRAME: the header is no longer needed
        do_load = Signal()             # take the pending frame now
        m.d.comb += [
            end_held.eq(hs_held & o_end_held),
            end_live.eq(hs_live & inb.last),
            end_frame.eq(hs_frame & o_last),
            releasing.eq(hs_frame & ~o_hdr & o_first),
            # pend_ready is this frame's own until the slot is released: a frame that
            # releases it in its last clock (held bypass, one-beat decompressed frame)
            # does not load the next one then
            do_load.eq(front.pend_ready &
                       (b_idle | end_live | (end_frame & (o_hdr | ~o_first)))),
            front.release.eq(end_held | releasing),
            front.end_live.eq(end_live),
        ]
        with m.If(hs_held):
            m.d.sync += [o_idx.eq(o_idx + 1), o_end_held.eq(o_idx + 2 == o_nheld),
                         o_last.eq(o_held_last & (o_idx + 2 == o_nheld))]
        with m.If(hs_frame):
            m.d.sync += [o_left.eq(o_left - 1), o_last.eq(o_left == 2)]
            m.d.sync += o_tc.eq(0)
            with m.If(o_hdr):
                m.d.sync += [o_hleft.eq(o_hleft - 1), o_hdr.eq(o_hleft != 1),
                             o_idx.eq(o_idx + 1),
                             o_unow.eq(Mux(o_ub2, o_idx == 1, o_idx == 0))]
            with m.Else():
                m.d.sync += o_first.eq(0)
        with m.If(end_frame):
            m.d.comb += self.feed.fin_clear.eq(1)
            with m.If(bad):
                m.d.sync += self.malformed.eq(self.malformed + 1)
        with m.If((end_held & o_held_last) | end_live | end_frame):
            m.d.sync += [b_idle.eq(1), b_held.eq(0), b_live.eq(0), b_frame.eq(0)]
        with m.If(end_held & ~o_held_last):
            m.d.sync += [b_held.eq(0), b_live.eq(1)]

        # Everything here is a register load from the slot; last, so that it wins over
        # the finishing frame's own updates in the same clock.
        last_keep = Signal(BEAT_BYTES)
        for k in range(BEAT_BYTES):
            m.d.comb += last_keep[k].eq(pend.end_lane >= k)
        # Where the UDP length goes, by VLAN tag and IHL (l4 + 4 = l3 + 4 IHL + 4).
        umask = Signal(BEAT_BYTES // 4)
        ub2 = Signal()
        with m.Switch(Cat(pend.ihl, pend.vlan)):
            for vlan in (0, 1):
                for ihl in range(5, 16):
                    u = (18 if vlan else 14) + 4 * ihl + 4
                    with m.Case(ihl | (vlan << 4)):
                        m.d.comb += [umask.eq(1 << ((u % BEAT_BYTES) // 4)),
                                     ub2.eq(u >= 2 * BEAT_BYTES)]
        with m.If(do_load):
            for k in range(BEAT_BYTES):
                m.d.sync += o_low[k].eq(pend.p[:5] > k)
            m.d.sync += [
                o_bank.eq(pend.bank),
                o_tc.eq(Mux(pend.bypass, 0, Mux(pend.vlan, 0b10, 0b01))),
                o_umask.eq(Mux(pend.bypass | ~pend.udp, 0, umask)),
                o_ub2.eq(ub2),
                o_unow.eq(0),
            ]
            m.d.sync += [
                b_idle.eq(0),
                b_held.eq(pend.bypass),
                b_live.eq(0),
                b_frame.eq(~pend.bypass),
                o_idx.eq(0),
                o_end_held.eq(pend.nh1),
                o_nheld.eq(pend.nheld),
                o_held_last.eq(pend.held_last),
                o_held_user.eq(pend.held_user),
                o_hleft.eq(pend.p >> 5),
                o_first.eq(1),
                o_left.eq(pend.left),
                o_last.eq(Mux(pend.bypass, pend.held_last & pend.nh1, pend.one)),
                o_hdr.eq(pend.p[5:] != 0),
                o_last_keep.eq(Mux(pend.bypass, pend.held_keep, last_keep)),
            ]
        if platform == "formal":
            m.d.comb += [
                self.formal_open.eq(b_held | (b_frame & (o_hdr | o_first))),
                self.formal_after.eq(b_live | (b_frame & ~o_hdr & ~o_first)),
                self.formal_live.eq(b_live | (b_held & ~o_held_last)),
                self.formal_frame.eq(b_frame),
                Assert(b_idle + b_held + b_live + b_frame == 1, "back: not one state"),
            ]
            with m.If(b_frame | (b_held & o_held_last)):
                # the last beat's keep: 1..32 bytes from lane 0
                m.d.comb += Assert((o_last_keep != 0) & ((o_last_keep & (o_last_keep + 1)) == 0),
                                   "back: last keep not 1..32 bytes")
            with m.If(b_frame):
                # the counts: the beat holding P (after o_hleft header beats) is still to
                # come while the header is, the last beat is the one with o_left == 1
                m.d.comb += [
                    Assert(o_last == (o_left == 1), "back: last flag out of step"),
                    Assert(o_hdr == (o_hleft != 0), "back: header flag out of step"),
                    Assert(~(o_hdr | o_first) | (o_left > o_hleft), "back: P beat past the end"),
                    Assert(o_left != 0, "back: frame with no beat left"),
                    Assert(~o_hdr | o_first, "back: header beat after the P beat"),
                ]
            with m.If(b_held):
                m.d.comb += [
                    Assert(o_idx < o_nheld, "back: held beat past the held ones"),
                    Assert((o_nheld <= HOLD_BEATS) & (o_held_last | (o_nheld == HOLD_BEATS)),
                           "back: held beats out of range"),
                    Assert(o_end_held == (o_idx + 1 == o_nheld), "back: held end out of step"),
                    Assert(o_last == (o_held_last & o_end_held), "back: last flag out of step"),
                ]
        return m
