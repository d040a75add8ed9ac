"""DecompressionEngine: the RX engine (wire -> host), paper Fig. 10, spec section 4 RX.

Cut-through. Two loosely coupled halves share one "pending frame" slot:

* the front half holds the first beats of a frame (up to ``HOLD_BEATS``: the shim ends
  at byte 141 at most), lets the PacketMatcher and the shim check decide, then either
  hands the held beats over for a byte-identical pass-through, or starts the
  DecompressionUnit, streams the compressed bytes (shim stripped, Ethernet padding
  dropped) into it and has the HeaderRestore finish the IP header checksum;
* the back half emits the frame: for a decompressed one the header beats with the
  restored IP total length, IP checksum and UDP length put on their lanes, then the
  unit's 32-byte words, moved by the Realigner onto the byte lanes they take after byte
  P and merged with the header beat that holds byte P: P + L bytes in all, ``user`` on
  the last beat if the payload was malformed, the input was cut short, or the input
  frame had ``user`` set.

The held beats are written once, into a distributed-RAM memory of two banks of beats
(the front half fills one while the back half may still read the other's header
beats; ACT hands the bank over, nothing is copied). It has two read ports: the
feed's, which before FEED also reads the shim (in MATCH; the magic byte one clock
later, in SH2, if it is in the next beat), and the output's. The HeaderRestore sums
the IP header's words as HEAD holds the first three beats, so it keeps no copy of the
header either; the three restored fields are replaced on their byte lanes as the
header beats go out (each lane can take at most one of them; which beat and which
lane follow from VLAN, IHL and UDP, as flags loaded with the frame).

For timing (at most 6 LUT levels between registers), what the halves decide each
clock comes from registers prepared a step ahead: both halves' states are one-hot flag
registers; the front half's CHECK step works out every per-frame sum and compare the
ACT step needs (the size limit, the output beat count, the first beat's offer, which
held beats end the compressed stream), so ACT only copies registers; the feed keeps
"more than a beat left" and "the current held beat ends the stream" as flags, so the
end of the feed is a select of flags, and the input's last beat, if the compressed
stream may end in it, waits one clock for a registered compare of its byte count (the
input side has slack: its rate is not the output's); the back half's handshake per
state is one flat AND of flags, and its beat counts, "last beat", "header beat" and
the last beat's tkeep are loaded from the pending slot. The beat holding byte P takes
its header bytes straight from the pending frame's bank (released only as that beat
goes out). The memory's read addresses are registers (the feed's follows the
matcher's P while the front half waits), so a read is one level from flip-flops.

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
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from .axis import AxisBeat, axis_signature
from .primitives import FifoSlice, greater_than, keep_count
from .decompression_unit import DecompressionUnit
from .header_restore import HEADER_BEATS, HeaderRestore, patch_lanes
from .packet_matcher import PacketMatcher
from .realigner import Realigner
from .wire import BEAT_BYTES, DEFAULT_DSCP, MAX_FRAME_BYTES, SHIM_MAGIC

__all__ = ["DecompressionEngine", "HOLD_BEATS"]

HOLD_BEATS = 5                 # P <= 138, so the shim (P..P+3) ends within beat 4
_BANK_BEATS = 8                # beat memory: two banks of 8 entries (HOLD_BEATS used)


def _patch_lanes():
    """Lane -> (field, byte, flag) for every lane a restored field can take in beats 0..2:
    flag "tc0"/"tc1" (beat 0 without / with VLAN tag) or t (the UDP length at lane
    2 + 4t). No lane takes two (checked here)."""
    lanes = {}
    for vlan in (0, 1):
        for ihl in range(5, 16):
            for pos, field, hi in patch_lanes(vlan, ihl, udp=1):
                k = pos % BEAT_BYTES
                flag = ("tc1" if vlan else "tc0") if field != "udp" else k // 4
                assert field == "udp" or pos < BEAT_BYTES
                assert pos < HEADER_BEATS * BEAT_BYTES
                old = lanes.setdefault(k, (field, hi, flag))
                assert old == (field, hi, flag) or (field == "udp" and old[0] == "udp"
                                                    and old[1] == hi), (k, old, field)
    return lanes


_PATCH_LANES = _patch_lanes()

# Input beats carry their valid-byte count, computed before the input register slice
# so that the feed path does not count tkeep bits, and the VLAN test of bytes 12-13.
_InBeat = data.StructLayout({
    "data": 8 * BEAT_BYTES,
    "keep": BEAT_BYTES,
    "last": 1,
    "user": 1,
    "kc": 6,
    "vlan": 1,                 # bytes 12-13 are 0x8100 (for the HeaderRestore, beat 0)
})


def _keep_count(keep):
    # tkeep is a contiguous low mask (spec section 4): its popcount is the byte count,
    # read off as XORs (a popcount adder tree is deeper).
    return keep_count(keep)


class DecompressionEngine(wiring.Component):
    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=DEFAULT_DSCP)
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
        # Beat-wide register slices at both ports, entries in distributed RAM.
        m.submodules.in_slice = in_slice = FifoSlice(_InBeat)
        m.submodules.out_slice = out_slice = FifoSlice(AxisBeat)
        # The unit's words go straight into the Realigner's input register slice (its
        # ready is a flip-flop), so the unit leaves its own output slice out.
        m.submodules.unit = unit = DecompressionUnit(out_slice=False)
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
            in_slice.i.payload.vlan.eq(self.i.payload.data[12 * 8:14 * 8] == 0x0081),
            in_slice.i.valid.eq(self.i.valid),
            self.i.ready.eq(in_slice.i.ready),
        ]
        wiring.connect(m, out_slice.o, wiring.flipped(self.o))
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

        # Front-half state. The FSM states are one-hot flag registers (s_head ...
        # s_fin, in_feed for FEED, f_pass for PASS), so no state decode sits in front
        # of an enable.
        s_head = Signal(init=1)
        s_match = Signal()
        s_sh2 = Signal()
        s_check = Signal()
        s_act = Signal()
        s_drain = Signal()
        s_fin = Signal()
        in_feed = Signal()             # FEED
        f_pass = Signal()              # PASS
        # Back-half state, the same way.
        b_idle = Signal(init=1)
        b_held = Signal()              # bypass: the held beats
        b_live = Signal()              # bypass: the rest of the frame from the input
        b_frame = Signal()             # decompressed frame

        # The held beats live in a distributed-RAM memory of two banks: the front half
        # writes the frame it is working on into bank `bank_h`, the back half reads the
        # pending frame's bank; ACT hands the bank over (no copy). Two read ports: the
        # feed (and, before it, the shim check), and the output.
        m.submodules.beats = beats = Memory(shape=8 * BEAT_BYTES, depth=2 * _BANK_BEATS,
                                            init=[])
        wr = beats.write_port()
        rd_f = beats.read_port(domain="comb")
        rd_o = beats.read_port(domain="comb")
        bank_h = Signal()
        nheld = Signal(range(HOLD_BEATS + 1))
        hsel = Signal(HOLD_BEATS, init=1)   # nheld one-hot: the hold beat written next
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

        # Shim bytes P..P+2 (P = 42 + 4j: l3 is 14 or 18 and every header a multiple of
        # 4), read through the feed's port (idle until FEED) in MATCH, from beat P >> 5:
        # L at lanes P mod 32 and the next, the magic byte two lanes up; when
        # P mod 32 = 30 that byte is lane 0 of the next beat, read one clock later (SH2).
        shim_l = Signal(16)            # L, big-endian at P
        shim_ok = Signal()             # P is one of 42, 46, ... 154
        shim_m = Signal(8)             # byte P + 2 (the magic)

        # Registered decision inputs (MATCH), with the sums CHECK builds on.
        d_p = Signal(8)
        d_lr = Signal(14)              # received payload length |C|
        d_rem = Signal(14)             # compressed bytes after the shim, |C| - 4
        d_p4 = Signal(9)               # P + 4: where the compressed stream starts
        d_p31 = Signal(9)              # P + 31 (output beats = (P + 31 + L) >> 5)
        d_lim = Signal(14)             # MAX_FRAME_BYTES - P (largest L that fits)
        d_ls = Signal(16)              # shim L
        d_ok = Signal()
        d_vlan = Signal()
        d_ihl = Signal(4)
        d_udp = Signal()
        d_total = Signal(16)
        d_fidx = Signal(range(HOLD_BEATS + 1))   # beat of the stream's first byte
        d_ffirst = Signal(5)                     # ... and its lane
        m.d.comb += [d_fidx.eq(d_p4[5:]), d_ffirst.eq(d_p4[:5])]

        # Derived per-frame values (CHECK), so that ACT only copies registers.
        x_ok = Signal()
        x_sum = Signal(17)             # P + 31 + L
        x_total = Signal(16)
        x_udp_len = Signal(16)
        x_zero = Signal()              # no compressed bytes
        x_big = Signal()               # more than a beat of them
        x_r = Signal(15)               # |C| - 4 + first lane: the held beats' compares
        x_leh = Signal()               # the stream ends within the frame's held bytes
        x_end0 = Signal()              # the stream's first beat is the frame's last held one
        x_live0 = Signal()             # ... is not a held beat
        x_hc0 = Signal(6)              # bytes the first beat offers

        # Pending-frame slot (front -> back).
        pend_bank = Signal()           # the beat memory's bank holding its beats
        pend_busy = Signal()           # slot written, back half not done with it
        pend_ready = Signal()          # ... and the header is final
        pend_bypass = Signal()
        pend_nheld = Signal(range(HOLD_BEATS + 1))
        pend_nh1 = Signal()            # pend_nheld == 1
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
        pend_end_lane = Signal(5)      # (P + L - 1) mod 32: the last beat's last lane

        # End-of-input slot (front -> back) for decompressed frames: the input's tuser
        # and a cut-short input are only known once the input frame has ended.
        fin_valid = Signal()
        fin_bad = Signal()             # input tuser
        fin_trunc = Signal()
        fin_clear = Signal()
        f_user = Signal()
        f_trunc = Signal()

        # The HeaderRestore sums the IP header as HEAD holds the beats (see HEAD) and
        # adds the restored total length once ACT has started the frame; its checksum
        # then stays put until the next start, which comes only after this frame's
        # header beats are out (the slot is released first).
        restore_start = Signal()
        m.d.sync += restore_start.eq(0)
        m.d.comb += [
            restore.start.eq(restore_start),
            restore.ip_total.eq(pend_total),
        ]
        with m.If(restore.done):
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

        with m.If(fin_clear):
            m.d.sync += fin_valid.eq(0)

        # ------------------------------------------------------------ feed
        # One beat of compressed bytes per clock into the unit while in FEED: the held
        # beats first, then the live input; `first` is nonzero only on the shim's beat.
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
        # The unit's input ready is logic of its BurstBuffer's registers: every feed
        # update below is a kept term of registers ANDed with it, so it is one LUT
        # level from the ready to each register.
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
        m.d.sync += kc_ge.eq(greater_than(inb.payload.kc, f_rm33[:5]))
        f_chk = Signal()               # kc_ge is for the beat waiting now
        f_wait = Signal()              # a live last beat that has to wait for kc_ge
        m.d.comb += f_wait.eq(f_live & inb.payload.last & ~f_big & ~f_chk)
        with m.If(in_feed & inb.valid & f_wait):
            m.d.sync += f_chk.eq(1)
        m.d.comb += [
            src_data.eq(Mux(f_live, inb.payload.data, rd_f.data)),
            avail.eq(Mux(f_live, Mux(inb.payload.last, inb.payload.kc, BEAT_BYTES), f_hcur)),
            src_last.eq(Mux(f_live, inb.payload.last, f_hend)),
            src_valid.eq(in_feed & (~f_live | inb.valid) & ~f_wait),
            # A live beat other than the input's last offers 32 bytes, so there
            # le = ~f_big; only the input's last beat needs kc >= f_rem.
            le.eq(Mux(f_live, ~f_big & (~inb.payload.last | kc_ge), f_hv[0])),
            # le | src_last, from flags alone.
            ulast.eq(Mux(f_live, inb.payload.last | ~f_big, f_hv[0] | f_hend)),
            # Mux(le, f_rem, avail), spelt out per case.
            cnt.eq(Mux(f_live,
                       Mux(inb.payload.last,
                           Mux(~f_big & kc_ge, f_rem[:6], inb.payload.kc),
                           Mux(f_big, BEAT_BYTES, f_rem[:6])),
                       Mux(f_hv[0], f_rem[:6], f_hcur))),
            unit.i.valid.eq(src_valid),
            unit.i.payload.data.eq(src_data),
            unit.i.payload.first.eq(f_first),
            unit.i.payload.count.eq(cnt),
            unit.i.payload.last.eq(ulast),
            u_ready.eq(unit.i.ready),
            feed_hs.eq(src_valid & u_ready),
            # FEED from a held beat, spelt out without the live input's terms
            f_held.eq(in_feed & ~f_live),
            f_step.eq(f_held & ~f_zero),
            f_tolive.eq(f_step & (f_idx + 1 == pend_nheld)),
            f_lgo.eq(src_valid & f_live),
            f_end.eq(src_valid & ulast),
        ]

        # ------------------------------------------------------------ front half
        # HEAD: hold the frame's first beats (the input is always ready here).
        head_take = Signal()
        m.d.comb += head_take.eq(s_head & inb.valid)
        m.d.comb += [
            wr.addr.eq(Cat(nheld[:3], bank_h)),
            wr.data.eq(inb.payload.data),
            wr.en.eq(head_take),
            restore.beat.eq(inb.payload.data),
            restore.beat_valid.eq(head_take),
            restore.beat_sel.eq(hsel[:HEADER_BEATS]),
            restore.beat_vlan.eq(inb.payload.vlan),
        ]
        with m.If(head_take):
            m.d.sync += [
                nheld.eq(nheld + 1),
                hsel.eq(hsel << 1),
                held_kc.eq(inb.payload.kc),
                held_keep.eq(inb.payload.keep),
                held_user.eq(inb.payload.user),
                held_last.eq(inb.payload.last),
            ]
            with m.If(hsel[0]):
                # enable is sampled at the start of each frame (the matcher samples
                # dscp on the same beat).
                m.d.sync += en_r.eq(self.enable)
            with m.If(inb.payload.last | hsel[HOLD_BEATS - 1]):
                m.d.sync += [held_len.eq((nheld << 5) + inb.payload.kc),
                             s_head.eq(0), s_match.eq(1)]

        # The feed port's address is a register (no select in front of the memory, whose
        # read is on the feed's path into the BurstBuffer): it follows the matcher's
        # P >> 5 while the front half waits in HEAD and MATCH (the matcher's result is
        # registered a clock before MATCH can take it), then holds (P + 2) >> 5 for
        # SH2, then the feed's first held beat, then moves with f_idx.
        ra = Signal(3)
        ra_bank = Signal()
        m.d.comb += rd_f.addr.eq(Cat(ra, ra_bank))
        with m.If(s_head | s_match):
            m.d.sync += [ra.eq(info.payload_offset[5:8]), ra_bank.eq(bank_h)]

        # MATCH: take the matcher's result, and L from the shim.
        with m.If(s_match & pm_have):
            m.d.comb += pm_take.eq(1)
            po = info.payload_offset
            with m.Switch(po[2:5]):
                for g in range(BEAT_BYTES // 4):
                    with m.Case(g):
                        m.d.sync += shim_l.eq(Cat(rd_f.data.word_select(4 * g + 3, 8),
                                                  rd_f.data.word_select(4 * g + 2, 8)))
                        if 4 * g + 4 < BEAT_BYTES:
                            m.d.sync += shim_m.eq(rd_f.data.word_select(4 * g + 4, 8))
            m.d.sync += [
                shim_ok.eq((po[:2] == 2) & (po >= 42) & (po <= HOLD_BEATS * BEAT_BYTES - 6)),
                ra.eq((po + 2)[5:8]),
                d_p.eq(info.payload_offset),
                d_lr.eq(info.payload_len),
                d_rem.eq(info.payload_len - 4),
                d_p4.eq(info.payload_offset + 4),
                d_p31.eq(info.payload_offset + (BEAT_BYTES - 1)),
                d_lim.eq(MAX_FRAME_BYTES - info.payload_offset),
                d_vlan.eq(info.vlan),
                d_ihl.eq(info.ihl),
                d_udp.eq(info.udp),
                d_total.eq(info.ip_total_len),
                # A frame held in full must hold its IP packet; a longer one is
                # caught at its end (flagged, see the module docstring).
                d_ok.eq(info.header_ok & en_r &
                        (~held_last | (held_len >= info.min_frame_len))),
                s_match.eq(0),
                # the magic byte is in the next beat only if P mod 32 = 30
                s_sh2.eq(po[2:5] == 7), s_check.eq(po[2:5] != 7),
            ]

        # SH2: the shim's magic byte, lane 0 of the next beat (compared in CHECK: the
        # memory's read is slow).
        with m.If(s_sh2):
            m.d.sync += [shim_m.eq(rd_f.data[:8]), s_sh2.eq(0), s_check.eq(1)]

        # CHECK: the shim check and everything ACT needs, one register stage.
        with m.If(s_check):
            m.d.sync += ra.eq(d_fidx[:3])          # the feed's first held beat
            ls = shim_l
            end_first = Signal()
            m.d.comb += end_first.eq(held_last & (d_fidx + 1 == nheld))
            m.d.sync += [
                d_ls.eq(ls),
                # P + L <= MAX_FRAME_BYTES as L <= MAX_FRAME_BYTES - P.
                x_ok.eq(d_ok & shim_ok & (shim_m == SHIM_MAGIC) & (ls > d_lr)
                        & (ls <= d_lim)),
                x_sum.eq(d_p31 + ls),
                x_total.eq(d_total + ls - d_lr),
                x_udp_len.eq(ls + 8),
                x_zero.eq(d_rem == 0),
                x_big.eq(d_rem > BEAT_BYTES),
                x_r.eq(d_rem + d_ffirst),
                # The frame's last held beat ends the stream iff P + 4 + rem fits in
                # the held bytes (the other held beats are full).
                x_leh.eq(~held_last | (d_rem + d_p4 <= held_len)),
                x_end0.eq(end_first),
                x_live0.eq(d_fidx >= nheld),
                x_hc0.eq(Mux(end_first,
                             Mux(held_kc > d_ffirst, held_kc - d_ffirst, 0),
                             BEAT_BYTES - d_ffirst)),
                s_check.eq(0), s_act.eq(1),
            ]

        # ACT: the unit and the Realigner take one frame ahead at most: wait until they
        # took the previous frame's start and cfg, and the slot is free.
        act_fire = Signal()
        m.d.comb += act_fire.eq(s_act & ~pend_busy & ~st_valid & ~rl_valid)
        with m.If(act_fire):
            # (P + L - 1) mod 32 = (P + 31 + L) mod 32
            m.d.sync += pend_end_lane.eq(x_sum[:5])
            # Held beat j (0: the stream's first) ends the stream iff |C| - 4 + first
            # lane <= 32 (j + 1), and, if it is the frame's last, x_leh (ANDed into
            # all: for the others it follows from the first test).
            hv = Cat(*[x_r <= BEAT_BYTES * (j + 1) for j in range(HOLD_BEATS)])
            m.d.sync += [
                pend_busy.eq(1),
                pend_bank.eq(bank_h),
                bank_h.eq(~bank_h),
                pend_bypass.eq(~x_ok),
                pend_nheld.eq(nheld),
                pend_nh1.eq(hsel[1]),
                pend_held_last.eq(held_last),
                pend_held_kc.eq(held_kc),
                pend_held_keep.eq(held_keep),
                pend_held_user.eq(held_user),
                pend_p.eq(d_p),
                pend_left.eq(x_sum >> 5),
                pend_one.eq((x_sum >> 5) == 1),
                pend_vlan.eq(d_vlan),
                pend_ihl.eq(d_ihl),
                pend_udp.eq(d_udp),
                pend_total.eq(x_total),
                pend_udp_len.eq(x_udp_len),
                nheld.eq(0),
                hsel.eq(1),
                s_act.eq(0),
                # The feed registers load whether or not the frame is decompressed
                # (a bypassed frame never reads them).
                f_idx.eq(d_fidx),
                f_first.eq(d_ffirst),
                f_rem.eq(d_rem),
                # with no compressed bytes, one empty beat "from the held beats"
                f_live.eq(x_live0 & ~x_zero),
                f_zero.eq(x_zero),
                f_big.eq(x_big),
                f_rm33.eq(d_rem - (BEAT_BYTES + 1)),
                f_hcur.eq(Mux(x_zero, 0, x_hc0)),
                f_hend.eq(x_end0),
                f_hv.eq(Mux(x_zero, ~0, hv & x_leh.replicate(HOLD_BEATS))),
                f_user.eq(held_user & held_last),
                f_trunc.eq(0),
                f_chk.eq(0),
            ]
            with m.If(x_ok):
                m.d.sync += [
                    restore_start.eq(1),
                    st_valid.eq(1),
                    st_n.eq(d_ls >> 2),
                    st_r.eq(d_ls[:2]),
                    rl_valid.eq(1),
                    rl_insert.eq(d_p[:5]),
                    rl_length.eq(d_ls + d_p[:5]),
                    in_feed.eq(1),
                    self.decompressed.eq(self.decompressed + 1),
                    self.payload_bytes_in.eq(self.payload_bytes_in + d_lr),
                    self.payload_bytes_out.eq(self.payload_bytes_out + d_ls),
                ]
            with m.Else():
                m.d.sync += [
                    pend_ready.eq(1),
                    self.bypassed.eq(self.bypassed + 1),
                ]
                with m.If(held_last):
                    m.d.sync += s_head.eq(1)
                with m.Else():
                    m.d.sync += f_pass.eq(1)

        # FEED
        with m.If(feed_hs):
            rm33 = Signal(signed(15))
            m.d.comb += rm33.eq(f_rm33 - avail)
            m.d.sync += [f_first.eq(0), f_rem.eq(f_rem - avail), f_rm33.eq(rm33),
                         f_big.eq(~rm33[-1]), f_chk.eq(0)]
            with m.If(src_last & ~le):
                m.d.sync += f_trunc.eq(1)
        with m.If(f_lgo & u_ready):
            m.d.sync += f_user.eq(inb.payload.user)
        f_fin = Signal(attrs={"keep": 1})      # the feed ends, and so does the input frame
        f_drn = Signal(attrs={"keep": 1})      # the feed ends before the input frame
        m.d.comb += [f_fin.eq(f_end & (pend_held_last | src_last)),
                     f_drn.eq(f_end & ~(pend_held_last | src_last))]
        with m.If(f_end & u_ready):
            m.d.sync += in_feed.eq(0)
        with m.If(f_fin & u_ready):
            m.d.sync += s_fin.eq(1)
        with m.If(f_drn & u_ready):
            m.d.sync += s_drain.eq(1)
        with m.If(f_step & u_ready):
            # on to the next held beat, or to the live input after the last one
            nxt_end = Signal()
            m.d.comb += nxt_end.eq(pend_held_last & (f_idx + 2 == pend_nheld))
            m.d.sync += [f_idx.eq(f_idx + 1), ra.eq(f_idx + 1), f_hend.eq(nxt_end),
                         f_hcur.eq(Mux(nxt_end, pend_held_kc, BEAT_BYTES)),
                         f_hv.eq(f_hv >> 1)]
        with m.If(f_tolive & u_ready):
            m.d.sync += f_live.eq(1)

        # DRAIN: Ethernet padding (or junk past the IP total length) is dropped.
        with m.If(s_drain & inb.valid & inb.payload.last):
            m.d.sync += [f_user.eq(inb.payload.user), s_drain.eq(0), s_fin.eq(1)]

        # FIN
        with m.If(s_fin & (~fin_valid | fin_clear)):
            m.d.sync += [fin_valid.eq(1), fin_bad.eq(f_user), fin_trunc.eq(f_trunc),
                         s_fin.eq(0), s_head.eq(1)]

        with m.If(pend_release):
            m.d.sync += [pend_busy.eq(0), pend_ready.eq(0)]

        # ------------------------------------------------------------ back half
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

        # Output bytes from the held / restored header: all of a held or header beat,
        # and in the beat holding P (o_idx = P >> 5 by then; the slot is released only
        # as it goes out) the bytes below lane P mod 32; realigned D above them.
        from_hdr = Signal(BEAT_BYTES)
        hdr_data = Signal(8 * BEAT_BYTES)
        m.d.comb += [rd_o.addr.eq(Cat(o_idx[:3], o_bank)), hdr_data.eq(rd_o.data)]
        for k in range(BEAT_BYTES):
            m.d.comb += from_hdr[k].eq(b_held | o_hdr | (o_first & o_low[k]))
        # Per lane, the restored field byte that may replace the held byte there (each
        # lane has at most one: see _PATCH_LANES) and the flag that says it does now.
        fields = {"total": pend_total, "csum": restore.csum, "udp": pend_udp_len}
        hdr_or_d = Signal(8 * BEAT_BYTES)
        for k in range(BEAT_BYTES):
            sl = slice(8 * k, 8 * k + 8)
            hbyte = hdr_data[sl]
            if k in _PATCH_LANES:
                field, hi, flag = _PATCH_LANES[k]
                on = {"tc0": o_tc[0], "tc1": o_tc[1]}.get(flag)
                if on is None:
                    on = o_unow & o_umask[flag]
                val = fields[field].word_select(hi, 8)
                hbyte = Mux(on, val, hbyte)
            m.d.comb += hdr_or_d[sl].eq(Mux(from_hdr[k], hbyte, rl.o.payload.data[sl]))

        # The output handshake per state, each one flat over flags.
        hs_held = Signal()
        hs_live = Signal()
        hs_frame = Signal()
        bad = Signal()
        frame_ok = Signal()            # FRAME has a beat (a header beat or a data beat)
        m.d.comb += [
            frame_ok.eq(b_frame & (o_hdr | rl.o.valid) & (~o_last | fin_valid)),
            ob.valid.eq(b_held | (b_live & f_pass & inb.valid) | frame_ok),
            hs_held.eq(b_held & ob.ready),
            hs_live.eq(b_live & f_pass & inb.valid & ob.ready),
            hs_frame.eq(frame_ok & ob.ready),
            bad.eq(rl.o.payload.user | fin_trunc),
            ob.payload.data.eq(Mux(b_live, inb.payload.data, hdr_or_d)),
            ob.payload.keep.eq(Mux(b_live, inb.payload.keep,
                                   Mux(o_last, o_last_keep, (1 << BEAT_BYTES) - 1))),
            ob.payload.last.eq(Mux(b_live, inb.payload.last, o_last)),
            ob.payload.user.eq(Mux(b_live, inb.payload.user,
                                   o_last & Mux(b_held, o_held_user, bad | fin_bad))),
        ]
        ob_hs = Signal()
        m.d.comb += ob_hs.eq(ob.valid & ob.ready)
        with m.If(ob_hs & ob.payload.last):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)

        # The Realigner's ready from flip-flops only (it reaches into its pipeline).
        m.d.comb += rl.o.ready.eq(b_frame & ~o_hdr & (~o_last | fin_valid) & ob.ready)

        end_held = Signal()            # the last held beat goes out
        end_live = Signal()            # the live bypass frame's last beat goes out
        end_frame = Signal()           # the decompressed frame's last beat goes out
        releasing = Signal()           # FRAME: the header is no longer needed
        do_load = Signal()             # take the pending frame now
        m.d.comb += [
            end_held.eq(hs_held & o_end_held),
            end_live.eq(hs_live & inb.payload.last),
            end_frame.eq(hs_frame & o_last),
            releasing.eq(hs_frame & ~o_hdr & o_first),
            # pend_ready is this frame's own until the slot is released: a frame that
            # releases it in its last clock (held bypass, one-beat decompressed frame)
            # does not load the next one then
            do_load.eq(pend_ready & (b_idle | end_live | (end_frame & (o_hdr | ~o_first)))),
            pend_release.eq(end_held | releasing),
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
            m.d.comb += fin_clear.eq(1)
            with m.If(bad):
                m.d.sync += self.malformed.eq(self.malformed + 1)
        with m.If((end_held & o_held_last) | end_live | end_frame):
            m.d.sync += [b_idle.eq(1), b_held.eq(0), b_live.eq(0), b_frame.eq(0)]
        with m.If(end_held & ~o_held_last):
            m.d.sync += [b_held.eq(0), b_live.eq(1)]
        with m.If(end_live):
            m.d.sync += f_pass.eq(0)

        # PASS ends with the live bypass frame (the input is ready only through BLIVE).
        with m.If(end_live):
            m.d.sync += s_head.eq(1)

        # The input's ready as one flat expression of flags (the states that take
        # input beats: HEAD and DRAIN, FEED from the live input, a bypass passing
        # through; they never overlap).
        # (The terms without the unit's ready are kept apart, so it is one LUT level
        # from that ready to inb.ready.)
        in_other = Signal(attrs={"keep": 1})
        in_live = Signal(attrs={"keep": 1})
        m.d.comb += [
            in_other.eq(s_head | s_drain | (b_live & f_pass & ob.ready)),
            in_live.eq(in_feed & f_live & ~f_wait),
            inb.ready.eq(in_other | (in_live & u_ready)),
        ]

        # Everything here is a register load from the slot; last, so that it wins over
        # the finishing frame's own updates in the same clock.
        last_keep = Signal(BEAT_BYTES)
        for k in range(BEAT_BYTES):
            m.d.comb += last_keep[k].eq(pend_end_lane >= k)
        # Where the UDP length goes, by VLAN tag and IHL (l4 + 4 = l3 + 4 IHL + 4).
        umask = Signal(BEAT_BYTES // 4)
        ub2 = Signal()
        with m.Switch(Cat(pend_ihl, pend_vlan)):
            for vlan in (0, 1):
                for ihl in range(5, 16):
                    u = (18 if vlan else 14) + 4 * ihl + 4
                    with m.Case(ihl | (vlan << 4)):
                        m.d.comb += [umask.eq(1 << ((u % BEAT_BYTES) // 4)),
                                     ub2.eq(u >= 2 * BEAT_BYTES)]
        with m.If(do_load):
            for k in range(BEAT_BYTES):
                m.d.sync += o_low[k].eq(pend_p[:5] > k)
            m.d.sync += [
                o_bank.eq(pend_bank),
                o_tc.eq(Mux(pend_bypass, 0, Mux(pend_vlan, 0b10, 0b01))),
                o_umask.eq(Mux(pend_bypass | ~pend_udp, 0, umask)),
                o_ub2.eq(ub2),
                o_unow.eq(0),
            ]
            m.d.sync += [
                b_idle.eq(0),
                b_held.eq(pend_bypass),
                b_live.eq(0),
                b_frame.eq(~pend_bypass),
                o_idx.eq(0),
                o_end_held.eq(pend_nh1),
                o_nheld.eq(pend_nheld),
                o_held_last.eq(pend_held_last),
                o_held_user.eq(pend_held_user),
                o_hleft.eq(pend_p >> 5),
                o_first.eq(1),
                o_left.eq(pend_left),
                o_last.eq(Mux(pend_bypass, pend_held_last & pend_nh1, pend_one)),
                o_hdr.eq(pend_p[5:] != 0),
                o_last_keep.eq(Mux(pend_bypass, pend_held_keep, last_keep)),
            ]
        return m
