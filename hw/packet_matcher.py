"""PacketMatcher: parses a frame's first beats and decides whether the engines may touch it.

Shared by the TX and RX engines (paper Sec. VI-A: "sequence matching" on the first
burst). It *observes* a beat stream (no flow control of its own) and, once per frame,
reports the header fields the engines need, as soon as the third beat (bytes 64..95,
which hold the deepest field it reads: a TCP checksum at l4+17 <= 95) or the frame's
last beat has been seen.

Interface
---------
Inputs: ``beat`` (an ``AxisBeat``), ``valid`` (a beat is transferred this cycle:
connect it to ``valid & ready`` of the observed stream), ``dscp`` (configured DSCP,
sampled on each frame's first beat).

Outputs: ``done`` pulses for one cycle per frame, ``LATENCY`` cycles after the beat that
decided (beat 2, or the last beat of a shorter frame); ``info`` (a ``MatchInfo``) then
holds that frame's result until the next ``done``. Frames never overtake each other,
and a new frame may start every cycle (one-beat runts included).

``info.header_ok`` covers every check of spec section 4 except one the matcher cannot
make before the frame's end: the frame must hold ``info.min_frame_len`` bytes
(l3 + IP total length; more is Ethernet padding). The frame is eligible iff

    info.header_ok and frame_length >= info.min_frame_len

For frames that ended by beat 2, ``header_ok`` already includes that check. Fields
other than ``header_ok`` are only meaningful when the header parsed (they may hold
garbage for ineligible frames).
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisBeat
from .wire import BEAT_BYTES
from .primitives import keep_count

__all__ = ["MatchInfo", "PacketMatcher"]

MatchInfo = data.StructLayout({
    "header_ok": 1,
    "vlan": 1,
    "udp": 1,                 # 1: UDP, 0: TCP
    "proto": 8,
    "l3": 5,                  # 14 or 18
    "ihl": 4,
    "l4": 7,                  # l3 + 4*IHL, <= 78
    "l4_hdr_len": 7,          # 8 (UDP) or 4*data offset (TCP), <= 60
    "payload_offset": 8,      # P = l4 + l4_hdr_len, <= 138
    "payload_len": 16,        # L
    "ip_total_len": 16,
    "min_frame_len": 17,      # l3 + ip_total_len
    "tos": 8,
    "l4_csum": 16,            # the L4 checksum field as received (UDP: 0 = disabled)
})

# IP header offsets l4 can take for IHL 5..15 after a 14- or 18-byte Ethernet header.
_L4_OFFSETS = sorted({l3 + 4 * ihl for l3 in (14, 18) for ihl in range(5, 16)})
assert _L4_OFFSETS == list(range(34, 79, 4))   # l4 = 34 + 4*index, index 0..11
_WINDOW = 3 * BEAT_BYTES


class PacketMatcher(wiring.Component):
    LATENCY = 5

    beat: In(AxisBeat)
    valid: In(1)
    dscp: In(6)
    done: Out(1)
    info: Out(MatchInfo)

    def elaborate(self, platform):
        m = Module()
        B = BEAT_BYTES * 8

        # --- capture: beats 0 and 1 of the current frame; beat index saturates at 3.
        # The decision for a frame comes with its beat 2 or its last beat (at T); the
        # captures of beats 0 and 1 (and of the DSCP) still hold that frame in the clock
        # after T (the next frame's beat 0 is at T + 1 at the earliest, its beat 1 at
        # T + 2), so S1 reads them there instead of a frozen copy of the window.
        q = Signal(2)
        cap0 = Signal(B)
        cap1 = Signal(B)
        dscp_f = Signal(6)
        beat = self.beat
        trigger = Signal()
        m.d.comb += trigger.eq(self.valid & ((q == 2) | (beat.last & (q < 2))))

        def bb(i):
            return beat.data[8 * i: 8 * i + 8]

        # l4 = l3 + 4*IHL of beat 0 as the index of the place it selects among the 12
        # (l4 = 34 + 4*l4idx) and whether it is one of them, worked out as beat 0 passes.
        l4idx = Signal(4)
        l4hit = Signal()
        vlan_now = Signal()
        # Both candidates (IHL at byte 14: l4 = 14 + 4*IHL, or at 18 behind a VLAN tag)
        # side by side, the VLAN test picks one.
        idx14, idx18 = Signal(4), Signal(4)
        m.d.comb += [vlan_now.eq(Cat(bb(13), bb(12)) == 0x8100),
                     idx14.eq(bb(14)[:4] - 5), idx18.eq(bb(18)[:4] - 4)]
        with m.If(self.valid):
            with m.If(q == 0):
                m.d.sync += [cap0.eq(beat.data), dscp_f.eq(self.dscp),
                             l4idx.eq(Mux(vlan_now, idx18, idx14)),
                             l4hit.eq(Mux(vlan_now, bb(18)[:4] >= 4, bb(14)[:4] >= 5))]
            with m.If(q == 1):
                m.d.sync += cap1.eq(beat.data)
            with m.If(beat.last):
                m.d.sync += q.eq(0)
            with m.Elif(q != 3):
                m.d.sync += q.eq(q + 1)

        # The L4 fields read at l4 + 4..7, 12, 16, 17 (bytes 38..95), selected by the
        # index of l4 from the bytes in beat 1 (cap1, S1) and in beat 2 (this beat, S0);
        # a beat the frame does not have reads as 0.
        def l4_fields(byte_at, name):
            def field(k):
                f = Signal(8, name=f"{name}_at{k}")
                with m.Switch(l4idx):
                    for n, off in enumerate(_L4_OFFSETS):
                        if byte_at(off + k) is not None:
                            with m.Case(n):
                                m.d.comb += f.eq(byte_at(off + k))
                return f
            return Cat(field(5), field(4), field(7), field(6), field(17), field(16),
                       field(12)[4:])

        L4F = 16 + 16 + 16 + 4      # udp length, udp checksum, tcp checksum, data offset

        def in_beat2(i):
            return bb(i - 64) if i >= 64 else None

        # --- S0: what only the trigger beat has.
        v0 = Signal()
        ended0 = Signal()
        qend0 = Signal(2)
        nb0 = Signal(6)
        f2_0 = Signal(L4F)
        m.d.sync += v0.eq(trigger)
        with m.If(trigger):
            m.d.sync += [
                ended0.eq(beat.last), qend0.eq(q), nb0.eq(keep_count(beat.keep)),
                f2_0.eq(Mux((q == 2) & l4hit, l4_fields(in_beat2, "b2"), 0)),
            ]

        def b(i):
            return cap0[8 * i: 8 * i + 8]

        # --- S1: Ethernet / VLAN, and the IPv4 fields at l3 (two possible places); the
        # L4 fields complete with beat 1.
        v1 = Signal()
        vlan1 = Signal()
        et_ok1 = Signal()
        vi1, tos1, proto1 = Signal(8), Signal(8), Signal(8)
        tot1, ff1 = Signal(16), Signal(16)
        flen1 = Signal(7)
        ended1 = Signal()
        dscp1 = Signal(6)
        f1 = Signal(L4F)
        et_outer = Cat(b(13), b(12))
        et_inner = Cat(b(17), b(16))
        is_vlan = Signal()
        m.d.comb += is_vlan.eq(et_outer == 0x8100)

        def ipf(off):
            return Mux(is_vlan, b(18 + off), b(14 + off))

        def in_beat1(i):
            return cap1[8 * (i - 32): 8 * (i - 32) + 8] if 32 <= i < 64 else None

        m.d.sync += [
            v1.eq(v0), vlan1.eq(is_vlan),
            et_ok1.eq(Mux(is_vlan, et_inner, et_outer) == 0x0800),
            vi1.eq(ipf(0)), tos1.eq(ipf(1)), tot1.eq(Cat(ipf(3), ipf(2))),
            ff1.eq(Cat(ipf(7), ipf(6))), proto1.eq(ipf(9)),
            flen1.eq(qend0 * BEAT_BYTES + nb0), ended1.eq(ended0), dscp1.eq(dscp_f),
            f1.eq(f2_0 | Mux((qend0 != 0) & l4hit, l4_fields(in_beat1, "b1"), 0)),
        ]

        # --- S2: basic IPv4 checks (the L4 fields move on from S1).
        v2 = Signal()
        l3_2 = Signal(5)
        ihl2 = Signal(4)
        l4_2 = Signal(7)
        ip_ok2 = Signal()
        udp2 = Signal()
        tos2, proto2 = Signal(8), Signal(8)
        tot2 = Signal(16)
        udp_len2, csum2 = Signal(16), Signal(16)
        doff2 = Signal(4)
        flen2 = Signal(7)
        ended2, vlan2 = Signal(), Signal()
        ihl = vi1[:4]
        l3 = Mux(vlan1, 18, 14)
        l4 = Signal(7)
        m.d.comb += l4.eq(l3 + (ihl << 2))
        m.d.sync += [
            udp_len2.eq(f1[:16]), csum2.eq(Mux(proto1 == 17, f1[16:32], f1[32:48])),
            doff2.eq(f1[48:]),
        ]
        m.d.sync += [
            v2.eq(v1), l3_2.eq(l3), ihl2.eq(ihl), l4_2.eq(l4), tos2.eq(tos1), proto2.eq(proto1),
            tot2.eq(tot1), flen2.eq(flen1), ended2.eq(ended1), vlan2.eq(vlan1),
            udp2.eq(proto1 == 17),
            # DF (0x4000) is allowed; MF (0x2000) or any fragment offset is not.
            ip_ok2.eq(et_ok1 & (vi1[4:] == 4) & (ihl >= 5) & ((ff1 & 0x3FFF) == 0) &
                      ((proto1 == 6) | (proto1 == 17)) & (tos1[2:] == dscp1)),
        ]

        # --- S3: lengths.
        v3 = Signal()
        hl4_3 = Signal(7)
        l4len3 = Signal(signed(18))
        need3 = Signal(17)          # l4 header + 4 payload bytes must fit in the L4 length
        p3 = Signal(8)
        minlen3 = Signal(17)
        tcp_ok3 = Signal()
        hl4 = Signal(7)
        m.d.comb += hl4.eq(Mux(udp2, 8, doff2 << 2))
        m.d.sync += [
            v3.eq(v2), hl4_3.eq(hl4), l4len3.eq(tot2 - (ihl2 << 2)), need3.eq(hl4 + 4),
            p3.eq(l4_2 + hl4), minlen3.eq(l3_2 + tot2), tcp_ok3.eq(udp2 | (doff2 >= 5)),
        ]
        keep3 = [l3_2, ihl2, l4_2, tos2, proto2, tot2, udp_len2, csum2,
                 flen2, ended2, vlan2, udp2, ip_ok2]
        d3 = [Signal.like(s, name=f"{s.name}_3") for s in keep3]
        m.d.sync += [dst.eq(src) for dst, src in zip(d3, keep3)]
        (l3_3, ihl3, l4_3, tos3, proto3, tot3, udp_len3, csum3,
         flen3, ended3, vlan3, udp3, ip_ok3) = d3

        # --- S4: final checks, register the result.
        info = self.info
        ok = Signal()
        m.d.comb += ok.eq(
            ip_ok3 & tcp_ok3 & (l4len3 >= need3) &
            (~udp3 | (udp_len3 == l4len3)) &
            (~ended3 | (flen3 >= minlen3)))
        m.d.sync += self.done.eq(v3)
        with m.If(v3):
            m.d.sync += [
                info.header_ok.eq(ok), info.vlan.eq(vlan3), info.udp.eq(udp3),
                info.proto.eq(proto3), info.l3.eq(l3_3), info.ihl.eq(ihl3), info.l4.eq(l4_3),
                info.l4_hdr_len.eq(hl4_3), info.payload_offset.eq(p3),
                info.payload_len.eq(l4len3 - hl4_3), info.ip_total_len.eq(tot3),
                info.min_frame_len.eq(minlen3), info.tos.eq(tos3),
                info.l4_csum.eq(csum3),
            ]
        return m
