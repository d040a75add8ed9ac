"""RX feed: a frame's compressed bytes into the DecompressionUnit, then its input's end."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..burst_buffer import PieceLayout
from ..primitives import greater_than
from ..wire import BEAT_BYTES
from .layouts import HOLD_BEATS, FeedBack, FrontFeed, HoldFeed

__all__ = ["Feed"]


class Feed(wiring.Component):
    """FEED: one beat of compressed bytes per clock into the unit (``o``): the held
    beats first (``hold.f_data``, the hold's feed read port; the front half moves its
    address on at ``front.ra_step`` to ``ra_next``), then the live input (``hold.beat``); ``first``
    is nonzero only on the shim's beat. DRAIN then drops the Ethernet padding (or junk
    past the IP total length) up to the input frame's end, and FIN puts the input's
    tuser and whether it was cut short into the end-of-input slot ``back.fin`` (registers,
    freed by the back half's ``fin_clear``; ``front.fin_done`` strobes as it is written).

    ``front.start`` is the front half's ACT, a load strobe taken whatever this stage's ready
    (it is idle then): it loads every register for the frame (all worked out a step
    ahead, so that "this beat ends the feed" is a select of flags) and, with ``go``,
    starts FEED.

    Timing contract: the unit's ``o.ready`` is logic of its BurstBuffer's registers;
    every update here is a kept term of registers ANDed with it, so it is one LUT level
    from that ready to each register, and to the input's ready (``hold.live_take``: the
    kept "a live beat is wanted" AND ``o.ready``). ``hold.drain`` is the DRAIN flag (the
    input is ready then). The input's last beat, if the stream may end in it, waits
    one clock for a registered compare of its byte count.
    """

    front: In(FrontFeed)
    hold: In(HoldFeed)
    o: Out(stream.Signature(PieceLayout))
    back: Out(FeedBack)

    def __init__(self):
        super().__init__()
        # A frame in FEED, DRAIN or FIN: driven only when elaborated for formal checks
        # (platform "formal"), whose induction relates it to the front half's loads.
        self.formal_busy = Signal()

    def elaborate(self, platform):
        m = Module()
        front, hold, back = self.front, self.hold, self.back
        inb, pend = hold.beat, front.pend
        inb_valid = hold.beat_valid
        m.d.comb += front.start.ready.eq(1)
        load = front.start.valid
        ld = front.start.payload

        in_feed = Signal()             # FEED
        s_drain = Signal()
        s_fin = Signal()
        m.d.comb += hold.drain.eq(s_drain)

        # End-of-input slot (feed -> back) for decompressed frames.
        fin_valid = Signal()
        fin_bad = Signal()             # input tuser
        fin_trunc = Signal()
        f_user = Signal()
        f_trunc = Signal()
        m.d.comb += [back.fin.valid.eq(fin_valid), back.fin.bad.eq(fin_bad),
                     back.fin.trunc.eq(fin_trunc)]

        # Feed state.
        f_idx = Signal(range(HOLD_BEATS + 1))
        f_first = Signal(5)
        f_rem = Signal(14)
        f_live = Signal()              # feeding from the input now, not from the held beats
        # Registered facts about the feed: f_rem == 0 (only possible at the start),
        # f_rem > 32 and f_rem - 33 (its sign after this beat is the next f_big), the
        # bytes the current held beat offers, whether it is the frame's last, and for
        # the held beats still to come whether each one ends the stream (f_hv, bit 0
        # for the current one): so "this beat ends the feed" is a select of flags.
        f_zero = Signal()
        f_big = Signal()
        f_rm33 = Signal(signed(15))
        f_hcur = Signal(6)             # what the current held beat offers
        f_hend = Signal()              # the current held beat is the frame's last
        f_hv = Signal(HOLD_BEATS)

        with m.If(back.fin_clear):
            m.d.sync += fin_valid.eq(0)

        # Computed whatever the state (only valid and ready are gated), so the state
        # decode stays off the count and end paths. The beats go straight into the
        # unit's BurstBuffer input register (no slice in between): its ready comes from
        # its own registers.
        src_data = Signal(8 * BEAT_BYTES)
        src_last = Signal()            # this beat ends the input frame
        src_valid = Signal(attrs={"keep": 1})
        avail = Signal(6)              # compressed-stream bytes this beat offers
        le = Signal()                  # ... and they cover the rest (f_rem <= avail)
        cnt = Signal(6)
        ulast = Signal()
        feed_hs = Signal()
        u_ready = Signal()
        f_held = Signal(attrs={"keep": 1})     # FEED from a held beat
        f_step = Signal(attrs={"keep": 1})     # ... that moves on to the next one
        f_tolive = Signal(attrs={"keep": 1})   # ... after which the live input follows
        f_lgo = Signal(attrs={"keep": 1})      # a live beat offered
        f_end = Signal(attrs={"keep": 1})      # the beat offered ends the feed
        # kc >= f_rem for f_rem in 1..32 (the only case it is read: ~f_big on a live
        # beat) is kc > f_rem - 1, and f_rem - 1 = f_rm33 mod 32. It is registered: the
        # input's last beat, when the stream may end in it (~f_big), waits one clock
        # (f_chk) before it is fed, so the byte count is a select of registers. (One
        # clock per frame on the input side, where the engine has slack.)
        kc_ge = Signal()
        m.d.sync += kc_ge.eq(greater_than(inb.kc, f_rm33[:5]))
        f_chk = Signal()               # kc_ge is for the beat waiting now
        f_wait = Signal()              # a live last beat that has to wait for kc_ge
        m.d.comb += f_wait.eq(f_live & inb.last & ~f_big & ~f_chk)
        with m.If(in_feed & inb_valid & f_wait):
            m.d.sync += f_chk.eq(1)
        m.d.comb += [
            src_data.eq(Mux(f_live, inb.data, hold.f_data)),
            avail.eq(Mux(f_live, Mux(inb.last, inb.kc, BEAT_BYTES), f_hcur)),
            src_last.eq(Mux(f_live, inb.last, f_hend)),
            src_valid.eq(in_feed & (~f_live | inb_valid) & ~f_wait),
            # A live beat other than the input's last offers 32 bytes, so there
            # le = ~f_big; only the input's last beat needs kc >= f_rem.
            le.eq(Mux(f_live, ~f_big & (~inb.last | kc_ge), f_hv[0])),
            # le | src_last, from flags alone.
            ulast.eq(Mux(f_live, inb.last | ~f_big, f_hv[0] | f_hend)),
            # Mux(le, f_rem, avail), spelt out per case.
            cnt.eq(Mux(f_live,
                       Mux(inb.last,
                           Mux(~f_big & kc_ge, f_rem[:6], inb.kc),
                           Mux(f_big, BEAT_BYTES, f_rem[:6])),
                       Mux(f_hv[0], f_rem[:6], f_hcur))),
            self.o.valid.eq(src_valid),
            self.o.payload.data.eq(src_data),
            self.o.payload.first.eq(f_first),
            self.o.payload.count.eq(cnt),
            self.o.payload.last.eq(ulast),
            u_ready.eq(self.o.ready),
            feed_hs.eq(src_valid & u_ready),
            # FEED from a held beat, spelt out without the live input's terms
            f_held.eq(in_feed & ~f_live),
            f_step.eq(f_held & ~f_zero),
            f_tolive.eq(f_step & (f_idx + 1 == pend.nheld)),
            f_lgo.eq(src_valid & f_live),
            f_end.eq(src_valid & ulast),
        ]

        # ACT loads the feed (whether or not the frame is decompressed).
        with m.If(load):
            m.d.sync += [
                f_idx.eq(ld.idx),
                f_first.eq(ld.first),
                f_rem.eq(ld.rem),
                f_live.eq(ld.live),
                f_zero.eq(ld.zero),
                f_big.eq(ld.big),
                f_rm33.eq(ld.rm33),
                f_hcur.eq(ld.hcur),
                f_hend.eq(ld.hend),
                f_hv.eq(ld.hv),
                f_user.eq(ld.user),
                f_trunc.eq(0),
                f_chk.eq(0),
            ]
            with m.If(ld.go):
                m.d.sync += in_feed.eq(1)

        # FEED
        with m.If(feed_hs):
            rm33 = Signal(signed(15))
            m.d.comb += rm33.eq(f_rm33 - avail)
            m.d.sync += [f_first.eq(0), f_rem.eq(f_rem - avail), f_rm33.eq(rm33),
                         f_big.eq(~rm33[-1]), f_chk.eq(0)]
            with m.If(src_last & ~le):
                m.d.sync += f_trunc.eq(1)
        with m.If(f_lgo & u_ready):
            m.d.sync += f_user.eq(inb.user)
        f_fin = Signal(attrs={"keep": 1})      # the feed ends, and so does the input frame
        f_drn = Signal(attrs={"keep": 1})      # the feed ends before the input frame
        m.d.comb += [f_fin.eq(f_end & (pend.held_last | src_last)),
                     f_drn.eq(f_end & ~(pend.held_last | src_last))]
        with m.If(f_end & u_ready):
            m.d.sync += in_feed.eq(0)
        with m.If(f_fin & u_ready):
            m.d.sync += s_fin.eq(1)
        with m.If(f_drn & u_ready):
            m.d.sync += s_drain.eq(1)
        nxt_end = Signal()
        m.d.comb += [front.ra_step.eq(f_step & u_ready), front.ra_next.eq(f_idx + 1)]
        with m.If(f_step & u_ready):
            # on to the next held beat, or to the live input after the last one
            m.d.comb += nxt_end.eq(pend.held_last & (f_idx + 2 == pend.nheld))
            m.d.sync += [f_idx.eq(f_idx + 1), f_hend.eq(nxt_end),
                         f_hcur.eq(Mux(nxt_end, pend.held_kc, BEAT_BYTES)),
                         f_hv.eq(f_hv >> 1)]
        with m.If(f_tolive & u_ready):
            m.d.sync += f_live.eq(1)

        # The live input is wanted (the unit's ready ANDed in last, see above).
        in_live = Signal(attrs={"keep": 1})
        m.d.comb += [in_live.eq(in_feed & f_live & ~f_wait),
                     hold.live_take.eq(in_live & u_ready)]

        # DRAIN: Ethernet padding (or junk past the IP total length) is dropped.
        with m.If(s_drain & inb_valid & inb.last):
            m.d.sync += [f_user.eq(inb.user), s_drain.eq(0), s_fin.eq(1)]

        # FIN
        fin_go = Signal()
        m.d.comb += [fin_go.eq(s_fin & (~fin_valid | back.fin_clear)),
                     front.fin_done.eq(fin_go)]
        with m.If(fin_go):
            m.d.sync += [fin_valid.eq(1), fin_bad.eq(f_user), fin_trunc.eq(f_trunc),
                         s_fin.eq(0)]
        if platform == "formal":
            # One frame state at a time (the invariant the liveness induction needs).
            m.d.comb += [self.formal_busy.eq(in_feed | s_drain | s_fin),
                         Assert(in_feed + s_drain + s_fin <= 1, "feed: two states at once")]
        return m
