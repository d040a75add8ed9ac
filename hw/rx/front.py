"""RX front half: per frame, decompress or pass, and everything the other stages need."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..decompression_unit import StartLayout
from ..realigner import realigner_cfg
from ..wire import (BEAT_BYTES, EB_K_MAX, K_MIN, MAX_FRAME_BYTES, SHIM_MAGIC, SHIM_MAGIC_V2,
                    SHIM_MAGIC_V3)
from .layouts import (HOLD_BEATS, FrontBack, FrontCheck, FrontEgress, FrontFeed,
                      FrontRestore, HoldFront, MatchResult, Pending)

__all__ = ["Front"]


class Front(wiring.Component):
    """The front half's decision, in one-hot flag states after the hold's ``hold.done``:

    * MATCH takes the PacketMatcher's result (``matcher``, kept until taken)
      and L and the magic from the shim, read through the hold's feed read port
      (``hold.f_addr`` is a register: it follows the matcher's P >> 5 while the frame is held,
      so the read is one level from flip-flops); SH2 reads the magic byte one clock later
      when it is lane 0 of the next beat; MATCH also starts the check stage
      (``check.go``: version 3's check word, recomputed from the held beats);
    * VER decodes the magic against the frame's accepted versions (``held.versions``,
      sampled with its first beat), picks the shim's length (4 bytes, or 8 for
      version 3) into the sums CHECK uses and registers the compares of L and k (the
      size limit, L > |C|, k's range, the length bound for either shim length);
    * CHECK works out every per-frame sum and compare ACT needs (the shim check, the size
      limit, the output beat count, the first beat's offer, which held beats end the
      compressed stream), so ACT only copies registers; it waits for the check stage
      (``check.done``) and takes its answer (``check.ok``). The shim check accepts the wire
      format versions the mask names: magic 0xC5 (version 1), 0xC6 (version 2, the
      bounded codec, whose k, byte 3, must be in 1..16 and whose L must be restorable
      from the received bytes: |C| >= 4 + 2 ceil((L div 4) / 8) + L mod 4, the shim, a
      zero tag word per group and the tail) or 0xC7 (version 3: version 2's rules with
      the 8-byte shim, and the check word must match); anything else is forwarded
      unchanged, a version-3 frame refused only by its check word counted in
      ``check_failed`` too;
    * ACT, once the unit and the Realigner took the previous frame's start (``start``,
      ``rl_cfg``) and the pending slot is free, takes the held frame (``hold.take``), loads
      the slot (``back.pend``, registers) and the feed (``feed.start``), and for a decompressed
      frame starts the unit, the Realigner and the HeaderRestore (``restore.start``);
      a bypassed one waits for its output (PASS, ``back.f_pass``) unless it is held in full.

    ``back.pend_ready``: the slot's header is final (bypass: at once; decompressed: when the
    HeaderRestore is ``restore.done``); the back half's ``release`` frees the slot.
    ``hold.restart`` (HEAD again) is a strobe: a held bypass frame in ACT, the
    feed's ``fin_done``, the back half's ``end_live``. ``feed.start`` is a load strobe and is
    not gated by its ready: the feed is idle whenever the front half is in ACT. After
    ACT the feed owns the read address (``ra_step``, ``ra_next``).
    """

    hold: In(HoldFront)
    matcher: In(MatchResult)
    check: Out(FrontCheck)
    restore: Out(FrontRestore)
    feed: Out(FrontFeed)
    start: Out(stream.Signature(StartLayout))
    rl_cfg: Out(stream.Signature(realigner_cfg()))
    back: Out(FrontBack)
    egress: Out(FrontEgress)
    decompressed: Out(32)
    version1: Out(32)              # decompressed frames per wire format version
    version2: Out(32)
    version3: Out(32)
    bypassed: Out(32)
    check_failed: Out(32)          # of bypassed: version 3 refused by its check word
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def __init__(self):
        super().__init__()
        # Driven only when elaborated for formal checks (platform "formal"): the state
        # the front half's check relates to its neighbour models (its induction).
        self.formal_busy = Signal()        # the pending slot written, not released
        self.formal_ready = Signal()       # ... and its header final
        self.formal_held = Signal()        # MATCH, SH2, CHECK or ACT: a frame not taken
        self.formal_match = Signal()       # MATCH
        self.formal_pm = Signal()          # the matcher's result kept, not taken
        self.formal_magic = Signal(8)      # the shim's magic byte as read (CHECK, ACT)

    def elaborate(self, platform):
        m = Module()
        hold, feed, back = self.hold, self.feed, self.back
        held, info = hold.held, self.matcher.info
        nheld, hsel, held_last, held_kc = held.nheld, held.hsel, held.last, held.kc
        held_len = held.len

        # One-hot flag registers (HEAD is the hold's), so no state decode sits in front
        # of an enable.
        s_match = Signal()
        s_sh2 = Signal()
        s_ver = Signal()
        s_check = Signal()
        s_act = Signal()
        f_pass = Signal()              # PASS
        m.d.comb += back.f_pass.eq(f_pass)
        with m.If(hold.done):
            m.d.sync += s_match.eq(1)

        pm_have = Signal()
        pm_take = Signal()
        with m.If(self.matcher.done):
            m.d.sync += pm_have.eq(1)
        with m.Elif(pm_take):
            m.d.sync += pm_have.eq(0)

        # Shim bytes P..P+2 (P = 42 + 4j: l3 is 14 or 18 and every header a multiple of
        # 4), read through the feed's port (idle until FEED) in MATCH, from beat P >> 5:
        # L at lanes P mod 32 and the next, the magic byte two lanes up; when
        # P mod 32 = 30 that byte is lane 0 of the next beat, read one clock later (SH2).
        shim_l = Signal(16)            # L, big-endian at P
        shim_ok = Signal()             # P is one of 42, 46, ... 154
        shim_m = Signal(8)             # byte P + 2 (the magic)
        shim_k = Signal(8)             # byte P + 3 (k)

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
        # Version 2's length bound |C| >= 4 + 2 ceil(n / 8) + r (n = L >> 2, r = L & 3)
        # without adders behind the shim read: with L = 32 a + b and |C| = 2 H + E it is
        # a <= H - 2 - d, d = ceil((c - E) / 2), c = 2 [b >= 4] + (b & 3); the four
        # thresholds H - 2 - d are summed in MATCH from the matcher's |C|.
        d_thr = [Signal(signed(15), name=f"d_thr{j}") for j in range(4)]
        # ... and version 3's (8-byte shim: the thresholds 2 lower; both compared in VER),
        # its P + 8, |C| - 8, picked in VER.
        d_thr8 = [Signal(signed(15), name=f"d_thr8_{j}") for j in range(4)]
        d_p8 = Signal(9)
        d_rem8 = Signal(14)
        d_k = Signal(5)                # the bounded codec's k, for the unit
        d_v2 = Signal()                # the bounded codec (versions 2 and 3)
        d_v3 = Signal()
        # VER's decode: the magic, masked by the accepted versions; the check word.
        acc_v1 = Signal()
        acc_v2 = Signal()
        acc_v3 = Signal()
        v_k_ok = Signal()              # VER: k in the bounded codec's range
        v_len_ok = Signal()            # L > |C| and P + L within the largest frame
        v_fit4 = Signal()              # version 2's length bound holds (4-byte shim)
        v_fit8 = Signal()              # ... with version 3's 8-byte shim
        ck_ok = Signal()               # the check stage's answer (valid in CHECK)
        m.d.comb += ck_ok.eq(self.check.ok)
        d_fidx = Signal(range(HOLD_BEATS + 1))   # beat of the stream's first byte
        d_ffirst = Signal(5)                     # ... and its lane
        m.d.comb += [d_fidx.eq(d_p4[5:]), d_ffirst.eq(d_p4[:5])]

        # Derived per-frame values (CHECK), so that ACT only copies registers.
        x_ok = Signal()
        x_refused = Signal()           # version 3 refused only by its check word
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
        pend_busy = Signal()           # slot written, back half not done with it
        pend_ready = Signal()          # ... and the header is final
        m.d.comb += back.pend_ready.eq(pend_ready)
        slot = {n: Signal(f.shape, name=f"pend_{n}") for n, f in Pending}
        for n, s in slot.items():
            m.d.comb += [getattr(back.pend, n).eq(s), getattr(feed.pend, n).eq(s)]
        m.d.comb += [self.restore.ip_total.eq(slot["total"]),
                     self.egress.total.eq(slot["total"]),
                     self.egress.udp_len.eq(slot["udp_len"])]

        # The HeaderRestore adds the restored total length once ACT has started the
        # frame; its checksum then stays put until the next start, which comes only
        # after this frame's header beats are out (the slot is released first).
        restore_start = Signal()
        m.d.sync += restore_start.eq(0)
        m.d.comb += self.restore.start.eq(restore_start)
        with m.If(self.restore.done):
            m.d.sync += pend_ready.eq(1)

        st_valid = Signal()
        st_n = Signal(12)
        st_r = Signal(2)
        st_v2 = Signal()
        st_k = Signal(5)
        m.d.comb += [
            self.start.valid.eq(st_valid),
            self.start.payload.n.eq(st_n),
            self.start.payload.r.eq(st_r),
            self.start.payload.v2.eq(st_v2),
            self.start.payload.k.eq(st_k),
        ]
        with m.If(self.start.ready):
            m.d.sync += st_valid.eq(0)
        rl_valid = Signal()
        rl_insert = Signal(5)
        rl_length = Signal(16)
        m.d.comb += [
            self.rl_cfg.valid.eq(rl_valid),
            self.rl_cfg.payload.skip.eq(0),
            self.rl_cfg.payload.insert.eq(rl_insert),
            self.rl_cfg.payload.length.eq(rl_length),
        ]
        with m.If(self.rl_cfg.ready):
            m.d.sync += rl_valid.eq(0)

        # The feed port's address is a register (no select in front of the memory, whose
        # read is on the feed's path into the BurstBuffer): it follows the matcher's
        # P >> 5 while the frame is held and in MATCH (the matcher's result is
        # registered a clock before MATCH can take it), then holds (P + 2) >> 5 for
        # SH2, then the feed's first held beat, then moves with the feed.
        ra = Signal(3)
        ra_bank = Signal()
        m.d.comb += hold.f_addr.eq(Cat(ra, ra_bank))
        with m.If(hold.head | s_match):
            m.d.sync += [ra.eq(info.payload_offset[5:8]), ra_bank.eq(held.bank)]

        # MATCH: take the matcher's result, and L from the shim.
        rd = hold.f_data
        m.d.comb += [self.check.go.eq(pm_take), self.check.info.eq(info)]
        with m.If(s_match & pm_have):
            m.d.comb += pm_take.eq(1)
            po = info.payload_offset
            with m.Switch(po[2:5]):
                for g in range(BEAT_BYTES // 4):
                    with m.Case(g):
                        m.d.sync += shim_l.eq(Cat(rd.word_select(4 * g + 3, 8),
                                                  rd.word_select(4 * g + 2, 8)))
                        if 4 * g + 4 < BEAT_BYTES:
                            m.d.sync += [shim_m.eq(rd.word_select(4 * g + 4, 8)),
                                         shim_k.eq(rd.word_select(4 * g + 5, 8))]
            m.d.sync += [
                shim_ok.eq((po[:2] == 2) & (po >= 42) & (po <= HOLD_BEATS * BEAT_BYTES - 6)),
                ra.eq((po + 2)[5:8]),
                d_p.eq(info.payload_offset),
                d_lr.eq(info.payload_len),
                d_rem.eq(info.payload_len - 4),
                *[d_thr[j].eq((info.payload_len >> 1) - (2 + j)) for j in range(4)],
                *[d_thr8[j].eq((info.payload_len >> 1) - (4 + j)) for j in range(4)],
                d_p4.eq(info.payload_offset + 4),
                d_p8.eq(info.payload_offset + 8),
                d_rem8.eq(info.payload_len - 8),
                d_p31.eq(info.payload_offset + (BEAT_BYTES - 1)),
                d_lim.eq(MAX_FRAME_BYTES - info.payload_offset),
                d_vlan.eq(info.vlan),
                d_ihl.eq(info.ihl),
                d_udp.eq(info.udp),
                d_total.eq(info.ip_total_len),
                # A frame held in full must hold its IP packet; a longer one is
                # caught at its end (flagged, see the engine's docstring).
                d_ok.eq(info.header_ok & held.en &
                        (~held_last | (held_len >= info.min_frame_len))),
                s_match.eq(0),
                # the magic byte is in the next beat only if P mod 32 = 30
                s_sh2.eq(po[2:5] == 7), s_ver.eq(po[2:5] != 7),
            ]

        # SH2: the shim's magic byte, lane 0 of the next beat (compared in CHECK: the
        # memory's read is slow).
        with m.If(s_sh2):
            m.d.sync += [shim_m.eq(rd[:8]), shim_k.eq(rd[8:16]), s_sh2.eq(0), s_ver.eq(1)]

        # VER: the version decode and the shim's length.
        with m.If(s_ver):
            is_v3 = Signal()
            m.d.comb += is_v3.eq(shim_m == SHIM_MAGIC_V3)
            vers = held.versions
            m.d.sync += [
                acc_v1.eq((shim_m == SHIM_MAGIC) & vers[0]),
                acc_v2.eq((shim_m == SHIM_MAGIC_V2) & vers[1]),
                acc_v3.eq(is_v3 & vers[2]),
                s_ver.eq(0), s_check.eq(1),
            ]
            with m.If(is_v3):
                m.d.sync += [d_p4.eq(d_p8), d_rem.eq(d_rem8)]
            # The length and k rules' compares, from the shim's registers (read in MATCH
            # or SH2); in CHECK behind them the decision mapped to 7 levels.
            ls = shim_l
            c8 = Signal(3)             # c + 1 - E, 0..6; d = (c + 1 - E) >> 1
            m.d.comb += c8.eq(Cat(C(0, 1), ls[2:5] != 0) + ls[0:2] + 1 - d_lr[0])
            for fit, thr in ((v_fit4, d_thr), (v_fit8, d_thr8)):
                fits = Signal(4, name=f"{fit.name}_j")     # a <= H - 2 - j (- 2)
                m.d.comb += [fits[j].eq(~thr[j][14] & (ls[5:16] <= thr[j][0:14]))
                             for j in range(4)]
                m.d.sync += fit.eq(fits.bit_select(c8[1:3], 1))
            m.d.sync += [
                v_k_ok.eq((shim_k >= K_MIN) & (shim_k <= EB_K_MAX)),
                # P + L <= MAX_FRAME_BYTES as L <= MAX_FRAME_BYTES - P.
                v_len_ok.eq((ls > d_lr) & (ls <= d_lim)),
            ]

        # CHECK: the shim check and everything ACT needs, one register stage (once the
        # check stage has answered: 3 clocks after MATCH, so CHECK waits about a clock).
        with m.If(s_check & self.check.done):
            m.d.sync += ra.eq(d_fidx[:3])          # the feed's first held beat
            ls = shim_l
            end_first = Signal()
            m.d.comb += end_first.eq(held_last & (d_fidx + 1 == nheld))
            bounded = Signal()
            m.d.comb += bounded.eq(acc_v2 | acc_v3)
            # The bounded codec's rules (versions 2 and 3), the check word aside: the
            # length bound with version 3's 8-byte shim where the magic is version 3's
            # and accepted (otherwise the rules do not count: not bounded, or version 2).
            v2_rules = Signal()
            m.d.comb += v2_rules.eq(v_k_ok & Mux(acc_v3, v_fit8, v_fit4))
            common = Signal()
            m.d.comb += common.eq(d_ok & shim_ok & v_len_ok)
            m.d.sync += [
                d_ls.eq(ls),
                d_k.eq(shim_k[:5]),
                d_v2.eq(bounded),
                d_v3.eq(acc_v3),
                x_ok.eq(common & (acc_v1 | (bounded & v2_rules & (ck_ok | ~acc_v3)))),
                x_refused.eq(common & acc_v3 & v2_rules & ~ck_ok),
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
        m.d.comb += [hold.take.eq(act_fire), feed.start.valid.eq(act_fire)]
        # Held beat j (0: the stream's first) ends the stream iff |C| - 4 + first
        # lane <= 32 (j + 1), and, if it is the frame's last, x_leh (ANDed into
        # all: for the others it follows from the first test).
        hv = Cat(*[x_r <= BEAT_BYTES * (j + 1) for j in range(HOLD_BEATS)])
        # The feed's registers load whether or not the frame is decompressed (a
        # bypassed frame never reads them).
        fs = feed.start.payload
        m.d.comb += [
            fs.go.eq(x_ok),
            fs.idx.eq(d_fidx),
            fs.first.eq(d_ffirst),
            fs.rem.eq(d_rem),
            # with no compressed bytes, one empty beat "from the held beats"
            fs.live.eq(x_live0 & ~x_zero),
            fs.zero.eq(x_zero),
            fs.big.eq(x_big),
            fs.rm33.eq(d_rem - (BEAT_BYTES + 1)),
            fs.hcur.eq(Mux(x_zero, 0, x_hc0)),
            fs.hend.eq(x_end0),
            fs.hv.eq(Mux(x_zero, ~0, hv & x_leh.replicate(HOLD_BEATS))),
            fs.user.eq(held.user & held_last),
        ]
        with m.If(act_fire):
            # (P + L - 1) mod 32 = (P + 31 + L) mod 32
            m.d.sync += slot["end_lane"].eq(x_sum[:5])
            m.d.sync += [
                pend_busy.eq(1),
                slot["bank"].eq(held.bank),
                slot["bypass"].eq(~x_ok),
                slot["nheld"].eq(nheld),
                slot["nh1"].eq(hsel[1]),
                slot["held_last"].eq(held_last),
                slot["held_kc"].eq(held_kc),
                slot["held_keep"].eq(held.keep),
                slot["held_user"].eq(held.user),
                slot["p"].eq(d_p),
                slot["left"].eq(x_sum >> 5),
                slot["one"].eq((x_sum >> 5) == 1),
                slot["vlan"].eq(d_vlan),
                slot["ihl"].eq(d_ihl),
                slot["udp"].eq(d_udp),
                slot["total"].eq(x_total),
                slot["udp_len"].eq(x_udp_len),
                s_act.eq(0),
            ]
            with m.If(x_ok):
                m.d.sync += [
                    restore_start.eq(1),
                    st_valid.eq(1),
                    st_n.eq(d_ls >> 2),
                    st_r.eq(d_ls[:2]),
                    st_v2.eq(d_v2),
                    st_k.eq(d_k),
                    rl_valid.eq(1),
                    rl_insert.eq(d_p[:5]),
                    rl_length.eq(d_ls + d_p[:5]),
                    self.decompressed.eq(self.decompressed + 1),
                    self.version1.eq(self.version1 + ~d_v2),
                    self.version2.eq(self.version2 + (d_v2 & ~d_v3)),
                    self.version3.eq(self.version3 + d_v3),
                    self.payload_bytes_in.eq(self.payload_bytes_in + d_lr),
                    self.payload_bytes_out.eq(self.payload_bytes_out + d_ls),
                ]
            with m.Else():
                m.d.sync += [
                    pend_ready.eq(1),
                    self.bypassed.eq(self.bypassed + 1),
                    self.check_failed.eq(self.check_failed + x_refused),
                ]
                with m.If(~held_last):
                    m.d.sync += f_pass.eq(1)
        # HEAD again: a bypassed frame held in full, the end of a decompressed frame's
        # input (FIN), the end of a live bypass frame (PASS).
        m.d.comb += hold.restart.eq((act_fire & ~x_ok & held_last) | feed.fin_done |
                                    back.end_live)

        # The feed moves the read address on to its next held beat.
        with m.If(feed.ra_step):
            m.d.sync += ra.eq(feed.ra_next)

        with m.If(back.release):
            m.d.sync += [pend_busy.eq(0), pend_ready.eq(0)]
        with m.If(back.end_live):
            m.d.sync += f_pass.eq(0)
        if platform == "formal":
            m.d.comb += [
                self.formal_busy.eq(pend_busy), self.formal_ready.eq(pend_ready),
                self.formal_held.eq(s_match | s_sh2 | s_ver | s_check | s_act),
                self.formal_pm.eq(pm_have), self.formal_match.eq(s_match),
                self.formal_magic.eq(shim_m),
                Assert(s_match + s_sh2 + s_ver + s_check + s_act <= 1, "front: two states at once"),
            ]
        return m
