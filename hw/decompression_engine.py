"""DecompressionEngine: the RX engine (wire -> host), paper Fig. 10, spec section 4 RX.

Cut-through. Two loosely coupled halves share one "pending frame" slot:

* the front half holds the first beats of a frame (up to ``HOLD_BEATS``: the shim ends
  at byte 141 at most), lets the PacketMatcher and the shim check decide, then either
  hands the held beats over for a byte-identical pass-through, or starts the
  DecompressionUnit, streams the compressed bytes (shim stripped, Ethernet padding
  dropped) into it and launches the HeaderRestore on the held header;
* the back half emits the frame: for a decompressed one the restored header beats, then
  the unit's 32-byte words, moved by the Realigner onto the byte lanes they take after
  byte P and merged with the header beat that holds byte P: P + L bytes in all, ``user``
  on the last beat if the payload was malformed, the input was cut short, or the input
  frame had ``user`` set.

For timing, what the halves decide each clock comes from registers prepared a step
ahead: the output beat count, "last beat", "header beat" and the last beat's tkeep
are derived when the frame enters the pending slot; the feed keeps "more than a beat
left" and the bytes the current held beat offers; states that gate data paths are
mirrored in flag registers, so no state decode sits in front of a compare.

The front half moves on to the next frame as soon as the current one's input is in,
so a frame's header work overlaps the previous frame's output and, with the sink
always ready, the output runs at one beat per clock across frames.

Because the decision is taken from the header, a frame whose IP total length claims
more bytes than actually arrive can only be caught once it is held in full (frames
of up to ``HOLD_BEATS`` beats, which are then forwarded unchanged); a longer one is
decompressed with the missing bytes as zeros and flagged bad.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import BEAT_BYTES, AxisBeat, AxisRegisterSlice, axis_signature
from .decompression_unit import DecompressionUnit
from .header_restore import HEADER_BYTES, HeaderRestore
from .packet_matcher import PacketMatcher
from .realigner import Realigner, keep_count

__all__ = ["DecompressionEngine", "MAX_FRAME_BYTES", "SHIM_MAGIC", "HOLD_BEATS"]

MAX_FRAME_BYTES = 9216
SHIM_MAGIC = 0xC5
HOLD_BEATS = 5                 # P <= 138, so the shim (P..P+3) ends within beat 4
_HDR_BEATS = HEADER_BYTES // BEAT_BYTES

# Input beats carry their valid-byte count, computed before the input register slice
# so that the feed path does not count tkeep bits.
_InBeat = data.StructLayout({
    "data": 8 * BEAT_BYTES,
    "keep": BEAT_BYTES,
    "last": 1,
    "user": 1,
    "kc": 6,
})


def _keep_count(keep):
    # tkeep is a contiguous low mask (spec section 4): its popcount is the byte count,
    # read off as XORs (a popcount adder tree is deeper).
    return keep_count(keep)


class DecompressionEngine(wiring.Component):
    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=10)
    frames_in: Out(32)
    frames_out: Out(32)
    decompressed: Out(32)
    bypassed: Out(32)
    malformed: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def elaborate(self, platform):
        m = Module()

        # ---------------------------------------------------------------- plumbing
        m.submodules.in_slice = in_slice = AxisRegisterSlice(_InBeat)
        m.submodules.out_slice = out_slice = AxisRegisterSlice(AxisBeat)
        m.submodules.unit = unit = DecompressionUnit()
        m.submodules.feed = feed = AxisRegisterSlice(unit.i.payload.shape())
        m.submodules.restore = restore = HeaderRestore()
        m.submodules.matcher = pm = PacketMatcher()
        m.submodules.realign = rl = Realigner()

        in_kc = Signal(6)
        m.d.comb += [
            in_kc.eq(_keep_count(self.i.payload.keep)),
            in_slice.i.payload.data.eq(self.i.payload.data),
            in_slice.i.payload.keep.eq(self.i.payload.keep),
            in_slice.i.payload.last.eq(self.i.payload.last),
            in_slice.i.payload.user.eq(self.i.payload.user),
            in_slice.i.payload.kc.eq(in_kc),
            in_slice.i.valid.eq(self.i.valid),
            self.i.ready.eq(in_slice.i.ready),
        ]
        wiring.connect(m, out_slice.o, wiring.flipped(self.o))
        wiring.connect(m, feed.o, unit.i)
        # The unit's words go through the Realigner, which puts D on the byte lanes it
        # takes in the output frame (P mod 32 lanes inserted in front); the unit's error
        # rides on the last beat's user bit.
        word_keep = Signal(BEAT_BYTES)
        for k in range(BEAT_BYTES):
            m.d.comb += word_keep[k].eq(unit.o.payload.count > k)
        m.d.comb += [
            rl.i.payload.data.eq(unit.o.payload.data),
            rl.i.payload.keep.eq(word_keep),
            rl.i.payload.last.eq(unit.o.payload.last),
            rl.i.payload.user.eq(unit.o.payload.error),
            rl.i.valid.eq(unit.o.valid),
            unit.o.ready.eq(rl.i.ready),
        ]
        inb = in_slice.o
        ob = out_slice.i

        # Front-half state.
        hold = Array(Signal(8 * BEAT_BYTES, name=f"hold{j}") for j in range(HOLD_BEATS))
        nheld = Signal(range(HOLD_BEATS + 1))
        held_last = Signal()          # the frame ended within the held beats
        held_kc = Signal(6)           # byte count of that last beat
        held_keep = Signal(BEAT_BYTES)
        held_user = Signal()
        en_r = Signal()

        in_hs = Signal()
        m.d.comb += in_hs.eq(inb.valid & inb.ready)
        with m.If(in_hs & inb.payload.last):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)

        # ------------------------------------------------------------ matcher
        # It watches every input beat and reports once per frame (on beat 2 or the last
        # beat); the result is kept until the front half takes it.
        m.d.comb += [
            pm.beat.data.eq(inb.payload.data),
            pm.beat.keep.eq(inb.payload.keep),
            pm.beat.last.eq(inb.payload.last),
            pm.beat.user.eq(inb.payload.user),
            pm.valid.eq(in_hs),
            pm.dscp.eq(self.dscp),
        ]
        pm_have = Signal()
        pm_take = Signal()
        with m.If(pm.done):
            m.d.sync += pm_have.eq(1)
        with m.Elif(pm_take):
            m.d.sync += pm_have.eq(0)
        info = pm.info
        held_len = Signal(range(HOLD_BEATS * BEAT_BYTES + 1))

        # Shim bytes P..P+3 (P = 42 + 4j: l3 is 14 or 18 and every header a multiple of 4).
        flat = Cat(*hold)
        shim = Signal(32)
        shim_ok = Signal()
        with m.Switch(info.payload_offset):
            for p in range(42, HOLD_BEATS * BEAT_BYTES - 3, 4):
                with m.Case(p):
                    m.d.sync += [shim.eq(flat[8 * p:8 * p + 32]), shim_ok.eq(1)]
            with m.Default():
                m.d.sync += [shim.eq(0), shim_ok.eq(0)]

        # Registered decision inputs.
        d_p = Signal(8)
        d_lr = Signal(14)              # received payload length |C|
        d_ls = Signal(16)              # shim L
        d_ok = Signal()
        d_vlan = Signal()
        d_ihl = Signal(4)
        d_udp = Signal()
        d_total = Signal(16)

        # Derived per-frame values (one more register stage, adders in parallel).
        x_ok = Signal()
        x_end = Signal(17)             # P + L (shim L is 16 bits)
        x_rem = Signal(14)             # compressed bytes after the shim
        x_ffirst = Signal(5)
        x_fidx = Signal(range(HOLD_BEATS + 1))
        x_total = Signal(16)
        x_udp_len = Signal(16)

        # Pending-frame slot (front -> back).
        pend_hdr = Array(Signal(8 * BEAT_BYTES, name=f"pend{j}") for j in range(HOLD_BEATS))
        pend_busy = Signal()           # slot written, back half not done with it
        pend_ready = Signal()          # ... and the header is final
        pend_bypass = Signal()
        pend_nheld = Signal(range(HOLD_BEATS + 1))
        pend_held_last = Signal()
        pend_held_kc = Signal(6)
        pend_held_keep = Signal(BEAT_BYTES)
        pend_held_user = Signal()
        pend_p = Signal(8)
        pend_vlan = Signal()
        pend_ihl = Signal(4)
        pend_udp = Signal()
        pend_total = Signal(16)
        pend_udp_len = Signal(16)
        pend_release = Signal()
        # Output-side values of a decompressed frame, derived here so that the back
        # half loads them as plain register copies.
        pend_left = Signal(range(MAX_FRAME_BYTES // BEAT_BYTES + 2))   # output beats
        pend_one = Signal()            # ... exactly one
        pend_last_keep = Signal(BEAT_BYTES)
        pend_low = Signal(BEAT_BYTES)  # bytes below P mod 32

        # End-of-input slot (front -> back) for decompressed frames: the input's tuser
        # and a cut-short input are only known once the input frame has ended.
        fin_valid = Signal()
        fin_bad = Signal()             # input tuser
        fin_trunc = Signal()
        fin_clear = Signal()
        f_user = Signal()
        f_trunc = Signal()

        restore_start = Signal()
        m.d.sync += restore_start.eq(0)
        m.d.comb += [
            restore.start.eq(restore_start),
            restore.data.eq(Cat(*[pend_hdr[j] for j in range(_HDR_BEATS)])),
            restore.vlan.eq(pend_vlan),
            restore.ihl.eq(pend_ihl),
            restore.udp.eq(pend_udp),
            restore.ip_total.eq(pend_total),
            restore.udp_len.eq(pend_udp_len),
        ]
        with m.If(restore.done):
            for j in range(_HDR_BEATS):
                m.d.sync += pend_hdr[j].eq(restore.o_data.word_select(j, 8 * BEAT_BYTES))
            m.d.sync += pend_ready.eq(1)

        st_valid = Signal()
        st_n = Signal(12)
        st_r = Signal(2)
        m.d.comb += [
            unit.start.valid.eq(st_valid),
            unit.start.payload.n.eq(st_n),
            unit.start.payload.r.eq(st_r),
        ]
        with m.If(unit.start.ready):
            m.d.sync += st_valid.eq(0)
        rl_valid = Signal()
        rl_insert = Signal(5)
        rl_length = Signal(16)
        m.d.comb += [
            rl.cfg.valid.eq(rl_valid),
            rl.cfg.payload.skip.eq(0),
            rl.cfg.payload.insert.eq(rl_insert),
            rl.cfg.payload.length.eq(rl_length),
        ]
        with m.If(rl.cfg.ready):
            m.d.sync += rl_valid.eq(0)

        # Feed state.
        f_idx = Signal(range(HOLD_BEATS + 1))
        f_first = Signal(5)
        f_rem = Signal(14)
        f_live = Signal()              # feeding from the input now, not from the held beats
        # Registered facts about the feed, so that a beat's count and end are decided
        # by one small compare: f_rem == 0 (only possible at the start), f_rem > 32 and
        # f_rem - 33 (its sign after this beat is the next f_big), the bytes a held beat
        # offers (the first one from f_first, the frame's last held one up to its end).
        f_zero = Signal()
        f_big = Signal()
        f_rm33 = Signal(signed(15))
        f_hav = Signal(6)              # what the frame's last held beat offers
        f_hcur = Signal(6)             # what the current held beat offers
        f_hend = Signal()              # the current held beat is the frame's last
        in_feed = Signal()             # the front half is in FEED (a flag, not a decode)
        f_pass = Signal()              # ... in PASS

        with m.If(fin_clear):
            m.d.sync += fin_valid.eq(0)

        # ------------------------------------------------------------ feed
        # One beat of compressed bytes per clock into the unit while in FEED: the held
        # beats first, then the live input; `first` is nonzero only on the shim's beat.
        # Computed whatever the state (only valid and ready are gated), so the state
        # decode stays off the count and end paths.
        src_data = Signal(8 * BEAT_BYTES)
        src_last = Signal()            # this beat ends the input frame
        src_valid = Signal()
        avail = Signal(6)              # compressed-stream bytes this beat offers
        le = Signal()                  # ... and they cover the rest (f_rem <= avail)
        cnt = Signal(6)
        ulast = Signal()
        m.d.comb += [
            src_data.eq(Mux(f_live, inb.payload.data, hold[f_idx])),
            avail.eq(Mux(f_live, Mux(inb.payload.last, inb.payload.kc, BEAT_BYTES), f_hcur)),
            src_last.eq(Mux(f_live, inb.payload.last, f_hend)),
            src_valid.eq(in_feed & (~f_live | inb.valid)),
            le.eq(~f_big & (f_rem[:6] <= avail)),
            cnt.eq(Mux(le, f_rem[:6], avail)),
            ulast.eq(le | src_last),
            feed.i.valid.eq(src_valid),
            feed.i.payload.data.eq(src_data),
            feed.i.payload.first.eq(f_first),
            feed.i.payload.count.eq(cnt),
            feed.i.payload.last.eq(ulast),
        ]

        # ------------------------------------------------------------ front half
        with m.FSM(name="front") as front:
            with m.State("HEAD"):
                with m.If(in_hs):
                    m.d.sync += [
                        hold[nheld].eq(inb.payload.data),
                        nheld.eq(nheld + 1),
                        held_kc.eq(inb.payload.kc),
                        held_keep.eq(inb.payload.keep),
                        held_user.eq(inb.payload.user),
                        held_last.eq(inb.payload.last),
                    ]
                    with m.If(nheld == 0):
                        # enable is sampled at the start of each frame (the matcher
                        # samples dscp on the same beat).
                        m.d.sync += en_r.eq(self.enable)
                    with m.If(inb.payload.last | (nheld == HOLD_BEATS - 1)):
                        m.d.sync += held_len.eq((nheld << 5) + inb.payload.kc)
                        m.next = "MATCH"
            with m.State("MATCH"):
                with m.If(pm_have):
                    # shim registers load in this same cycle (see the Switch above)
                    m.d.comb += pm_take.eq(1)
                    m.d.sync += [
                        d_p.eq(info.payload_offset),
                        d_lr.eq(info.payload_len),
                        d_vlan.eq(info.vlan),
                        d_ihl.eq(info.ihl),
                        d_udp.eq(info.udp),
                        d_total.eq(info.ip_total_len),
                        # A frame held in full must hold its IP packet; a longer one is
                        # caught at its end (flagged, see the module docstring).
                        d_ok.eq(info.header_ok & en_r &
                                (~held_last | (held_len >= info.min_frame_len))),
                    ]
                    m.next = "CHECK"
            with m.State("CHECK"):
                ls = Signal(16)
                m.d.comb += ls.eq(Cat(shim[8:16], shim[0:8]))
                m.d.sync += [
                    d_ls.eq(ls),
                    x_ok.eq(d_ok & shim_ok & (shim[16:24] == SHIM_MAGIC) & (ls > d_lr)),
                    x_end.eq(d_p + ls),
                    x_rem.eq(d_lr - 4),
                    x_ffirst.eq(d_p + 4),
                    x_fidx.eq((d_p + 4) >> 5),
                    x_total.eq(d_total + ls - d_lr),
                    x_udp_len.eq(ls + 8),
                ]
                m.next = "ACT"
            with m.State("ACT"):
                ok = Signal()
                m.d.comb += ok.eq(x_ok & (x_end <= MAX_FRAME_BYTES))
                # The unit and the Realigner take one frame ahead at most: wait until
                # they took the previous frame's start and cfg.
                end_m1 = Signal(14)
                m.d.comb += end_m1.eq(x_end - 1)
                with m.If(~pend_busy & ~st_valid & ~rl_valid):
                    for k in range(BEAT_BYTES):
                        m.d.sync += [
                            pend_low[k].eq(d_p[:5] > k),
                            pend_last_keep[k].eq(end_m1[:5] >= k),
                        ]
                    for j in range(HOLD_BEATS):
                        m.d.sync += pend_hdr[j].eq(hold[j])
                    m.d.sync += [
                        pend_busy.eq(1),
                        pend_bypass.eq(~ok),
                        pend_nheld.eq(nheld),
                        pend_held_last.eq(held_last),
                        pend_held_kc.eq(held_kc),
                        pend_held_keep.eq(held_keep),
                        pend_held_user.eq(held_user),
                        pend_p.eq(d_p),
                        pend_left.eq((end_m1 >> 5) + 1),
                        pend_one.eq(end_m1 < BEAT_BYTES),
                        pend_vlan.eq(d_vlan),
                        pend_ihl.eq(d_ihl),
                        pend_udp.eq(d_udp),
                        pend_total.eq(x_total),
                        pend_udp_len.eq(x_udp_len),
                        nheld.eq(0),
                    ]
                    with m.If(ok):
                        m.d.sync += [
                            restore_start.eq(1),
                            st_valid.eq(1),
                            st_n.eq(d_ls >> 2),
                            st_r.eq(d_ls[:2]),
                            rl_valid.eq(1),
                            rl_insert.eq(d_p[:5]),
                            rl_length.eq(d_ls + d_p[:5]),
                            f_idx.eq(x_fidx),
                            f_first.eq(x_ffirst),
                            f_rem.eq(x_rem),
                            # with no compressed bytes, one empty beat "from the held beats"
                            f_live.eq((x_fidx >= nheld) & (x_rem != 0)),
                            f_zero.eq(x_rem == 0),
                            f_big.eq(x_rem > BEAT_BYTES),
                            f_rm33.eq(x_rem - (BEAT_BYTES + 1)),
                            f_hcur.eq(Mux(x_rem == 0, 0,
                                          Mux(held_last & (x_fidx + 1 == nheld),
                                              Mux(held_kc > x_ffirst, held_kc - x_ffirst, 0),
                                              BEAT_BYTES - x_ffirst))),
                            f_hend.eq(held_last & (x_fidx + 1 == nheld)),
                            in_feed.eq(1),
                            f_user.eq(held_user & held_last),
                            f_trunc.eq(0),
                            self.decompressed.eq(self.decompressed + 1),
                            self.payload_bytes_in.eq(self.payload_bytes_in + d_lr),
                            self.payload_bytes_out.eq(self.payload_bytes_out + d_ls),
                        ]
                        m.next = "FEED"
                    with m.Else():
                        m.d.sync += [
                            pend_ready.eq(1),
                            self.bypassed.eq(self.bypassed + 1),
                        ]
                        with m.If(held_last):
                            m.next = "HEAD"
                        with m.Else():
                            m.d.sync += f_pass.eq(1)
                            m.next = "PASS"
            with m.State("FEED"):
                with m.If(src_valid & feed.i.ready):
                    rm33 = Signal(signed(15))
                    m.d.comb += rm33.eq(f_rm33 - avail)
                    m.d.sync += [f_first.eq(0), f_rem.eq(f_rem - avail), f_rm33.eq(rm33),
                                 f_big.eq(~rm33[-1])]
                    with m.If(~f_zero):
                        with m.If(~f_live):
                            nxt_end = Signal()
                            m.d.comb += nxt_end.eq(pend_held_last & (f_idx + 2 == pend_nheld))
                            m.d.sync += [f_idx.eq(f_idx + 1), f_hend.eq(nxt_end),
                                         f_hcur.eq(Mux(nxt_end, pend_held_kc, BEAT_BYTES))]
                            with m.If(f_idx + 1 == pend_nheld):
                                m.d.sync += f_live.eq(1)
                        with m.Else():
                            m.d.sync += f_user.eq(inb.payload.user)
                    with m.If(src_last & ~le):
                        m.d.sync += f_trunc.eq(1)
                    with m.If(ulast):
                        m.d.sync += in_feed.eq(0)
                        with m.If(pend_held_last | src_last):
                            m.next = "FIN"
                        with m.Else():
                            m.next = "DRAIN"
            with m.State("DRAIN"):
                # Ethernet padding (or junk past the IP total length) is dropped.
                with m.If(in_hs & inb.payload.last):
                    m.d.sync += f_user.eq(inb.payload.user)
                    m.next = "FIN"
            with m.State("FIN"):
                with m.If(~fin_valid | fin_clear):
                    m.d.sync += [fin_valid.eq(1), fin_bad.eq(f_user), fin_trunc.eq(f_trunc)]
                    m.next = "HEAD"
            with m.State("PASS"):
                # Bypass: the back half forwards the live beats (see inb.ready below).
                with m.If(in_hs & inb.payload.last):
                    m.d.sync += f_pass.eq(0)
                    m.next = "HEAD"

        front_pass = Signal()
        m.d.comb += front_pass.eq(f_pass)
        with m.If(pend_release):
            m.d.sync += [pend_busy.eq(0), pend_ready.eq(0)]

        # ------------------------------------------------------------ back half
        o_bypass = Signal()
        o_idx = Signal(range(HOLD_BEATS + 1))     # header / held beat being emitted
        o_nheld = Signal(range(HOLD_BEATS + 1))
        o_end_held = Signal()                      # o_idx + 1 == o_nheld, as a register
        o_held_last = Signal()
        o_held_keep = Signal(BEAT_BYTES)
        o_held_user = Signal()
        o_hleft = Signal(range(HOLD_BEATS + 1))   # header beats before the one holding P
        o_first = Signal()                         # next data beat holds byte P
        o_left = Signal(range(MAX_FRAME_BYTES // BEAT_BYTES + 2))   # beats left, incl. this
        o_s = Signal(5)                            # P mod 32
        o_low = Signal(BEAT_BYTES)                 # bytes below P mod 32
        o_last_keep = Signal(BEAT_BYTES)
        o_last = Signal()                          # o_left == 1, as a register
        o_hdr = Signal()                           # o_hleft != 0, as a register
        mhdr = Signal(8 * BEAT_BYTES)              # the header beat that holds byte P

        do_load = Signal()
        b_frame = Signal()             # the back half is in FRAME (a flag, not a decode)

        def load_next():
            # Take the pending frame (the loads themselves follow the FSM, once).
            m.d.comb += do_load.eq(1)
            m.d.sync += b_frame.eq(~pend_bypass)
            with m.If(pend_bypass):
                m.next = "BHELD"
            with m.Else():
                m.next = "FRAME"

        # Byte k of the beat holding P: header below lane P mod 32, realigned D above.
        merged = Signal(8 * BEAT_BYTES)
        for k in range(BEAT_BYTES):
            sl = slice(8 * k, 8 * k + 8)
            m.d.comb += merged[sl].eq(Mux(o_first & o_low[k], mhdr[sl], rl.o.payload.data[sl]))

        ob_hs = Signal()
        m.d.comb += ob_hs.eq(ob.valid & ob.ready)
        with m.If(ob_hs & ob.payload.last):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)

        def frame_done(releasing):
            # Start the next frame in the same clock when it is ready (no bubble).
            with m.If(pend_ready & ~Value.cast(releasing).bool()):
                load_next()
            with m.Else():
                m.d.sync += b_frame.eq(0)
                m.next = "IDLE"

        # The Realigner's ready from flip-flops only (it reaches into its pipeline).
        m.d.comb += rl.o.ready.eq(b_frame & ~o_hdr & (~o_last | fin_valid) & ob.ready)

        with m.FSM(name="back") as back:
            with m.State("IDLE"):
                with m.If(pend_ready):
                    load_next()
            with m.State("BHELD"):
                # Bypass: the held beats as they came.
                is_last = Signal()
                end_held = Signal()
                m.d.comb += [
                    end_held.eq(o_end_held),
                    is_last.eq(o_held_last & end_held),
                    ob.valid.eq(1),
                    ob.payload.data.eq(pend_hdr[o_idx]),
                    ob.payload.keep.eq(Mux(is_last, o_held_keep, (1 << BEAT_BYTES) - 1)),
                    ob.payload.last.eq(is_last),
                    ob.payload.user.eq(is_last & o_held_user),
                ]
                with m.If(ob_hs):
                    m.d.sync += [o_idx.eq(o_idx + 1), o_end_held.eq(o_idx + 2 == o_nheld)]
                    with m.If(end_held):
                        m.d.comb += pend_release.eq(1)
                        with m.If(o_held_last):
                            frame_done(C(1, 1))
                        with m.Else():
                            m.next = "BLIVE"
            with m.State("BLIVE"):
                # Bypass, cut-through: the rest of the frame straight from the input.
                m.d.comb += [
                    ob.valid.eq(inb.valid & front_pass),
                    ob.payload.data.eq(inb.payload.data),
                    ob.payload.keep.eq(inb.payload.keep),
                    ob.payload.last.eq(inb.payload.last),
                    ob.payload.user.eq(inb.payload.user),
                ]
                with m.If(ob_hs & inb.payload.last):
                    frame_done(C(0, 1))
            with m.State("FRAME"):
                # Decompressed: restored header beats, then P + L bytes of header and D.
                hdr_beat = Signal()
                is_last = Signal()
                data_ok = Signal()
                fin_ok = Signal()
                bad = Signal()
                m.d.comb += [
                    hdr_beat.eq(o_hdr),
                    is_last.eq(o_last),
                    data_ok.eq(hdr_beat | rl.o.valid),
                    fin_ok.eq(~is_last | fin_valid),
                    bad.eq(rl.o.payload.user | fin_trunc),
                    ob.valid.eq(data_ok & fin_ok),
                    ob.payload.data.eq(Mux(hdr_beat, pend_hdr[o_idx], merged)),
                    ob.payload.keep.eq(Mux(is_last, o_last_keep, (1 << BEAT_BYTES) - 1)),
                    ob.payload.last.eq(is_last),
                    ob.payload.user.eq(is_last & (bad | fin_bad)),
                ]
                with m.If(ob_hs):
                    m.d.sync += [o_left.eq(o_left - 1), o_last.eq(o_left == 2)]
                    with m.If(hdr_beat):
                        m.d.sync += [o_hleft.eq(o_hleft - 1), o_hdr.eq(o_hleft != 1),
                                     o_idx.eq(o_idx + 1)]
                    with m.Else():
                        m.d.sync += o_first.eq(0)
                    releasing = Signal()
                    m.d.comb += releasing.eq(~hdr_beat & o_first)
                    with m.If(releasing):
                        # the header is no longer needed: the front half may refill the slot
                        m.d.comb += pend_release.eq(1)
                    with m.If(is_last):
                        m.d.comb += fin_clear.eq(1)
                        with m.If(bad):
                            m.d.sync += self.malformed.eq(self.malformed + 1)
                        frame_done(releasing)

        # The input's ready as one flat expression of flags (the states that take
        # input beats: HEAD and DRAIN, FEED from the live input, a bypass passing
        # through; they never overlap).
        m.d.comb += inb.ready.eq(front.ongoing("HEAD") | front.ongoing("DRAIN")
                                 | (in_feed & f_live & feed.i.ready)
                                 | (back.ongoing("BLIVE") & front_pass & ob.ready))

        # Everything here is a register load from the slot; after the FSM, so that
        # it wins over the finishing frame's own updates in the same clock.
        with m.If(do_load):
            m.d.sync += [
                o_bypass.eq(pend_bypass),
                o_idx.eq(0),
                o_end_held.eq(pend_nheld == 1),
                o_nheld.eq(pend_nheld),
                o_held_last.eq(pend_held_last),
                o_held_keep.eq(pend_held_keep),
                o_held_user.eq(pend_held_user),
                o_hleft.eq(pend_p >> 5),
                o_first.eq(1),
                o_left.eq(pend_left),
                o_last.eq(pend_one),
                o_hdr.eq(pend_p[5:] != 0),
                o_s.eq(pend_p[:5]),
                mhdr.eq(pend_hdr[pend_p >> 5]),
                o_low.eq(pend_low),
                o_last_keep.eq(pend_last_keep),
            ]
        return m
