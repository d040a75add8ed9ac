"""Board self-test: the checker at the end of the TX -> RX chain, and the fault injector.

``Checker`` walks the frames out of RX in lockstep with a ``ReferenceGenerator`` and
checks each one, beat by beat, in a free-running pipeline (it never stalls RX for longer
than the reference takes to produce a beat):

- header bytes equal the generated ones, except the ToS byte and the two checksums;
- the ToS byte: 0x2C (DSCP 11) frames untouched, compressed frames 0x28, frames TX fell
  back on (|C| >= L, from the reference) 0x00 (DSCP 0, ECN kept);
- payload equals the decoded payload D for compressed frames, the original otherwise;
- tkeep and tlast match the reference frame's length (P + L), tuser is never set;
- properties that need no model: the IP header checksum and the TCP/UDP checksum
  (pseudo header included) of the frame as received both sum to 0xFFFF.

With ``codec=False`` every frame must come back exactly as generated (the self-test
without engines: generator -> wire -> checker).

Checksums are summed over little-endian 16-bit lanes of each beat: a one's-complement
sum does not depend on byte order (RFC 1071), and P is even, so the lanes are the
checksum's own 16-bit words, byte-swapped; the pseudo-header words are swapped to match.
"""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from .axis import axis_signature
from .selftest_gen import GenBeat, KIND_OTHER_DSCP, KIND_TCP
from .wire import TOS_DEFAULT, TOS_OTHER

__all__ = ["Checker", "FaultInjector", "FAIL_HEADER", "FAIL_PAYLOAD", "FAIL_TOS",
           "FAIL_FRAMING", "FAIL_TUSER", "FAIL_IP_CSUM", "FAIL_L4_CSUM"]

FAIL_HEADER, FAIL_PAYLOAD, FAIL_TOS, FAIL_FRAMING, FAIL_TUSER, FAIL_IP_CSUM, FAIL_L4_CSUM = (
    1 << i for i in range(7))


def _fold1(x):
    """First fold of a 32-bit one's-complement sum: 17 bits."""
    return x[:16] + x[16:]


def _is_ffff(f1):
    """Whether a 17-bit first fold ends as 0xFFFF after its end-around carry, as a
    plain compare (no second adder): 0x0FFFF stays, 0x1FFFE + 1 becomes 0xFFFF."""
    return (f1 == 0x0FFFF) | (f1 == 0x1FFFE)


class Checker(wiring.Component):
    def __init__(self, codec=True):
        self.codec = codec
        super().__init__({
            "dut": In(axis_signature()),
            "ref": In(stream.Signature(GenBeat)),
            "frames_ok": Out(32),
            "frames_bad": Out(32),
            "fail": Out(1),
            "fail_reason": Out(7),     # FAIL_* bits, sticky
        })

    def elaborate(self, platform):
        m = Module()
        fire = Signal()
        m.d.comb += [
            fire.eq(self.dut.valid & self.ref.valid),
            # Join: each side moves only with the other (readies from valids only).
            self.dut.ready.eq(self.ref.valid),
            self.ref.ready.eq(self.dut.valid),
        ]

        # Stage 1: the two beats side by side.
        s1 = Signal()
        b = Signal(2)                 # beat index in frame, saturating at 2
        dd, rd, rdec = Signal(256), Signal(256), Signal(256)
        dk, rk = Signal(32), Signal(32)
        dl, du = Signal(), Signal()
        rl = Signal()
        s1_b = Signal(2)
        kind, length, csize = Signal(2), Signal(12), Signal(13)
        m.d.sync += s1.eq(fire)
        with m.If(fire):
            ref = self.ref.payload
            dut = self.dut.payload
            m.d.sync += [
                dd.eq(dut.data), dk.eq(dut.keep), dl.eq(dut.last), du.eq(dut.user),
                rd.eq(ref.data), rdec.eq(ref.dec), rk.eq(ref.keep), rl.eq(ref.last),
                kind.eq(ref.kind), length.eq(ref.length), csize.eq(ref.csize),
                s1_b.eq(b), b.eq(Mux(ref.last, 0, Mux(b == 2, 2, b + 1))),
            ]

        # Stage 2: per-byte compares and masks, lanes masked for the sums.
        tcp = kind == KIND_TCP
        hdr_mask = Signal(32)         # header bytes compared as they are
        hdr_all = Signal(32)          # every header byte (the rest of the beat is payload)
        b0_mask = 0xFFFFFFFF & ~((1 << 15) | (1 << 24) | (1 << 25))   # ToS, IP checksum
        udp_b1 = ((1 << 10) - 1) & ~(0b11 << 8)       # bytes 32..41 but the UDP checksum
        tcp_b1 = ((1 << 22) - 1) & ~(0b11 << 18)      # bytes 32..53 but the TCP checksum
        m.d.comb += [
            hdr_mask.eq(Mux(s1_b == 0, b0_mask, Mux(s1_b == 1, Mux(tcp, tcp_b1, udp_b1), 0))),
            hdr_all.eq(Mux(s1_b == 0, 0xFFFFFFFF,
                           Mux(s1_b == 1, Mux(tcp, (1 << 22) - 1, (1 << 10) - 1), 0))),
        ]
        s2 = Signal()
        eqo, eqd = Signal(32), Signal(32)
        s2_hmask, s2_pmask = Signal(32), Signal(32)
        s2_frame_bad, s2_user, s2_last = Signal(), Signal(), Signal()
        s2_tos = Signal(8)
        ipd, l4d = Signal(256), Signal(256)
        s2_kind, s2_length, s2_csize = Signal(2), Signal(12), Signal(13)
        keep_bytes = Cat(*(dk[j].replicate(8) for j in range(32)))
        ip_lanes = Mux(s1_b == 0, Cat(C(0, 14 * 8), C((1 << 144) - 1, 144)),
                       Mux(s1_b == 1, C(0xFFFF, 256), 0))
        l4_lanes = Mux(s1_b == 0, Cat(C(0, 26 * 8), C((1 << 48) - 1, 48)), keep_bytes)
        m.d.sync += [
            s2.eq(s1),
            eqo.eq(Cat(*(dd[8 * j:8 * j + 8] == rd[8 * j:8 * j + 8] for j in range(32)))),
            eqd.eq(Cat(*(dd[8 * j:8 * j + 8] == rdec[8 * j:8 * j + 8] for j in range(32)))),
            s2_hmask.eq(hdr_mask),
            s2_pmask.eq(rk & ~hdr_all),
            s2_frame_bad.eq((dk != rk) | (dl != rl)),
            s2_user.eq(du & dl),
            s2_last.eq(rl),
            ipd.eq(dd & ip_lanes),
            l4d.eq(dd & l4_lanes),
            s2_kind.eq(kind), s2_length.eq(length), s2_csize.eq(csize),
        ]
        with m.If(s1 & (s1_b == 0)):
            m.d.sync += s2_tos.eq(dd[8 * 15:8 * 16])

        # Stage 3: reduce the compares; partial lane sums (4 of 4 lanes each).
        s3 = Signal()
        s3_hdr_bad, s3_pay_bad_o, s3_pay_bad_d = Signal(), Signal(), Signal()
        s3_frame_bad, s3_user, s3_last = Signal(), Signal(), Signal()
        ip4 = [Signal(18, name=f"ip4_{i}") for i in range(4)]
        l44 = [Signal(18, name=f"l44_{i}") for i in range(4)]
        s3_kind, s3_length, s3_csize = Signal(2), Signal(12), Signal(13)
        # The ToS of each beat's own frame travels with it (a short next frame may be
        # in stage 2 while this one closes in stage 4).
        s3_tos, s4_tos = Signal(8), Signal(8)
        m.d.sync += [s3_tos.eq(s2_tos), s4_tos.eq(s3_tos)]

        def lane(v, i):
            return v[16 * i:16 * i + 16]
        m.d.sync += [
            s3.eq(s2),
            s3_hdr_bad.eq((~eqo & s2_hmask).any()),
            s3_pay_bad_o.eq((~eqo & s2_pmask).any()),
            s3_pay_bad_d.eq((~eqd & s2_pmask).any()),
            s3_frame_bad.eq(s2_frame_bad), s3_user.eq(s2_user), s3_last.eq(s2_last),
            s3_kind.eq(s2_kind), s3_length.eq(s2_length), s3_csize.eq(s2_csize),
        ]
        for i in range(4):
            m.d.sync += [
                ip4[i].eq(lane(ipd, 4 * i) + lane(ipd, 4 * i + 1) + lane(ipd, 4 * i + 2) + lane(ipd, 4 * i + 3)),
                l44[i].eq(lane(l4d, 4 * i) + lane(l4d, 4 * i + 1) + lane(l4d, 4 * i + 2) + lane(l4d, 4 * i + 3)),
            ]

        # Stage 4: beat sums; frame accumulators (flags and sums), closed on the last beat.
        s4 = Signal()
        ip_beat, l4_beat = Signal(20), Signal(20)
        s4_flags = Signal(5)          # hdr_bad, pay_bad_o, pay_bad_d, frame_bad, user
        s4_last = Signal()
        s4_kind, s4_length, s4_csize = Signal(2), Signal(12), Signal(13)
        m.d.sync += [
            s4.eq(s3), s4_last.eq(s3_last),
            ip_beat.eq(ip4[0] + ip4[1] + ip4[2] + ip4[3]),
            l4_beat.eq(l44[0] + l44[1] + l44[2] + l44[3]),
            s4_flags.eq(Cat(s3_hdr_bad, s3_pay_bad_o, s3_pay_bad_d, s3_frame_bad, s3_user)),
            s4_kind.eq(s3_kind), s4_length.eq(s3_length), s4_csize.eq(s3_csize),
        ]
        ip_acc, l4_acc = Signal(32), Signal(32)
        flag_acc = Signal(5)
        # Stage 5: a frame's totals (pseudo header added to the L4 sum, byte-swapped).
        s5 = Signal()
        ip_tot, l4_tot = Signal(32), Signal(32)
        s5_flags = Signal(5)
        s5_kind, s5_length, s5_csize = Signal(2), Signal(12), Signal(13)
        s5_tos = Signal(8)
        s4_tcp = s4_kind == KIND_TCP
        l4len = Signal(16)
        pseudo_le = Signal(17)
        m.d.comb += [
            l4len.eq(s4_length + Mux(s4_tcp, 20, 8)),
            pseudo_le.eq(Mux(s4_tcp, 6 << 8, 17 << 8) + Cat(l4len[8:16], l4len[0:8])),
        ]
        m.d.sync += s5.eq(0)
        with m.If(s4):
            with m.If(s4_last):
                m.d.sync += [
                    s5.eq(1),
                    ip_tot.eq(ip_acc + ip_beat), l4_tot.eq(l4_acc + l4_beat + pseudo_le),
                    s5_flags.eq(flag_acc | s4_flags),
                    s5_kind.eq(s4_kind), s5_length.eq(s4_length), s5_csize.eq(s4_csize),
                    s5_tos.eq(s4_tos),
                    ip_acc.eq(0), l4_acc.eq(0), flag_acc.eq(0),
                ]
            with m.Else():
                m.d.sync += [ip_acc.eq(ip_acc + ip_beat), l4_acc.eq(l4_acc + l4_beat),
                             flag_acc.eq(flag_acc | s4_flags)]

        # Stage 6: first folds of the checksums; stage 7: compares; then the verdict.
        s6 = Signal()
        ip_f1, l4_f1 = Signal(17), Signal(17)
        s6_flags = Signal(5)
        s6_kind = Signal(2)
        s6_tos = Signal(8)
        s6_fallback = Signal()
        m.d.sync += [
            s6.eq(s5), ip_f1.eq(_fold1(ip_tot)), l4_f1.eq(_fold1(l4_tot)),
            s6_flags.eq(s5_flags), s6_kind.eq(s5_kind), s6_tos.eq(s5_tos),
            s6_fallback.eq(s5_csize >= s5_length),
        ]
        s7 = Signal()
        ip_ok, l4_ok = Signal(), Signal()
        s7_flags = Signal(5)
        s7_kind = Signal(2)
        s7_tos = Signal(8)
        s7_fallback = Signal()
        m.d.sync += [
            s7.eq(s6), ip_ok.eq(_is_ffff(ip_f1)), l4_ok.eq(_is_ffff(l4_f1)),
            s7_flags.eq(s6_flags), s7_kind.eq(s6_kind), s7_tos.eq(s6_tos),
            s7_fallback.eq(s6_fallback),
        ]
        other = s7_kind == KIND_OTHER_DSCP
        hdr_bad, pay_bad_o, pay_bad_d, frame_bad, user = (s7_flags[i] for i in range(5))
        if self.codec:
            use_dec = ~other & ~s7_fallback
            tos_exp = Mux(other, TOS_OTHER, Mux(s7_fallback, 0x00, TOS_DEFAULT))
        else:
            use_dec = C(0)
            tos_exp = Mux(other, TOS_OTHER, TOS_DEFAULT)
        reason = Signal(7)
        m.d.comb += reason.eq(Cat(hdr_bad, Mux(use_dec, pay_bad_d, pay_bad_o),
                                  s7_tos != tos_exp, frame_bad, user, ~ip_ok, ~l4_ok))
        with m.If(s7):
            with m.If(reason == 0):
                m.d.sync += self.frames_ok.eq(self.frames_ok + 1)
            with m.Else():
                m.d.sync += [self.frames_bad.eq(self.frames_bad + 1), self.fail.eq(1),
                             self.fail_reason.eq(self.fail_reason | reason)]
        return m


class FaultInjector(wiring.Component):
    """Pass-through that, while ``fault`` is high, flips bit 0 of byte 64 of each frame
    of three beats or more (payload for every header this test sends)."""

    i: In(axis_signature())
    o: Out(axis_signature())
    fault: In(1)
    injected: Out(32)

    def elaborate(self, platform):
        m = Module()
        b = Signal(2)
        hit = Signal()
        m.d.comb += [
            hit.eq(self.fault & (b == 2)),
            self.o.valid.eq(self.i.valid),
            self.i.ready.eq(self.o.ready),
            self.o.payload.eq(self.i.payload),
            self.o.payload.data.eq(self.i.payload.data ^ hit),
        ]
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += b.eq(Mux(self.i.payload.last, 0, Mux(b == 3, 3, b + 1)))
            with m.If(hit):
                m.d.sync += self.injected.eq(self.injected + 1)
        return m
