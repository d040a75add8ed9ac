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

from .axis import AxisBeat, BEAT_BYTES
from .realigner import keep_count

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
        q = Signal(2)
        cap0 = Signal(B)
        cap1 = Signal(B)
        dscp_f = Signal(6)
        beat = self.beat
        trigger = Signal()
        m.d.comb += trigger.eq(self.valid & ((q == 2) | (beat.last & (q < 2))))
        with m.If(self.valid):
            with m.If(q == 0):
                m.d.sync += [cap0.eq(beat.data), dscp_f.eq(self.dscp)]
            with m.If(q == 1):
                m.d.sync += cap1.eq(beat.data)
            with m.If(beat.last):
                m.d.sync += q.eq(0)
            with m.Elif(q != 3):
                m.d.sync += q.eq(q + 1)

        # --- S0: freeze a 96-byte window of this frame (missing beats read as 0).
        v0 = Signal()
        win = Signal(3 * B)
        ended0 = Signal()
        qend0 = Signal(2)
        keep0 = Signal(BEAT_BYTES)
        dscp0 = Signal(6)
        m.d.sync += v0.eq(trigger)
        with m.If(trigger):
            m.d.sync += [
                win[:B].eq(Mux(q == 0, beat.data, cap0)),
                win[B:2 * B].eq(Mux(q == 1, beat.data, Mux(q == 2, cap1, 0))),
                win[2 * B:].eq(Mux(q == 2, beat.data, 0)),
                ended0.eq(beat.last), qend0.eq(q), keep0.eq(beat.keep),
                dscp0.eq(Mux(q == 0, self.dscp, dscp_f)),
            ]

        def b(i):
            return win[8 * i: 8 * i + 8]

        # --- S1: Ethernet / VLAN, and the IPv4 fields at l3 (two possible places).
        v1 = Signal()
        vlan1 = Signal()
        et_ok1 = Signal()
        vi1, tos1, proto1 = Signal(8), Signal(8), Signal(8)
        tot1, ff1 = Signal(16), Signal(16)
        flen1 = Signal(7)
        ended1 = Signal()
        dscp1 = Signal(6)
        win1 = Signal(3 * B)
        et_outer = Cat(b(13), b(12))
        et_inner = Cat(b(17), b(16))
        is_vlan = Signal()
        m.d.comb += is_vlan.eq(et_outer == 0x8100)
        nbytes = Signal(6)
        m.d.comb += nbytes.eq(keep_count(keep0))

        def ipf(off):
            return Mux(is_vlan, b(18 + off), b(14 + off))

        m.d.sync += [
            v1.eq(v0), vlan1.eq(is_vlan),
            et_ok1.eq(Mux(is_vlan, et_inner, et_outer) == 0x0800),
            vi1.eq(ipf(0)), tos1.eq(ipf(1)), tot1.eq(Cat(ipf(3), ipf(2))),
            ff1.eq(Cat(ipf(7), ipf(6))), proto1.eq(ipf(9)),
            flen1.eq(qend0 * BEAT_BYTES + nbytes), ended1.eq(ended0), dscp1.eq(dscp0),
            win1.eq(win),
        ]

        def b1(i):
            return win1[8 * i: 8 * i + 8]

        # --- S2: L4 fields at l4 = l3 + 4*IHL (12 legal places), basic IPv4 checks.
        v2 = Signal()
        l3_2 = Signal(5)
        ihl2 = Signal(4)
        l4_2 = Signal(7)
        ip_ok2 = Signal()
        udp2 = Signal()
        tos2, proto2 = Signal(8), Signal(8)
        tot2 = Signal(16)
        udp_len2, csum_udp2, csum_tcp2 = Signal(16), Signal(16), Signal(16)
        doff2 = Signal(4)
        flen2 = Signal(7)
        ended2, vlan2 = Signal(), Signal()
        ihl = vi1[:4]
        l3 = Mux(vlan1, 18, 14)
        l4 = Signal(7)
        m.d.comb += l4.eq(l3 + (ihl << 2))
        with m.Switch(l4):
            for off in _L4_OFFSETS:
                with m.Case(off):
                    m.d.sync += [
                        udp_len2.eq(Cat(b1(off + 5), b1(off + 4))),
                        csum_udp2.eq(Cat(b1(off + 7), b1(off + 6))),
                        csum_tcp2.eq(Cat(b1(off + 17), b1(off + 16))),
                        doff2.eq(b1(off + 12)[4:]),
                    ]
            with m.Default():
                m.d.sync += [udp_len2.eq(0), csum_udp2.eq(0), csum_tcp2.eq(0), doff2.eq(0)]
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
        keep3 = [l3_2, ihl2, l4_2, tos2, proto2, tot2, udp_len2, csum_udp2, csum_tcp2,
                 flen2, ended2, vlan2, udp2, ip_ok2]
        d3 = [Signal.like(s, name=f"{s.name}_3") for s in keep3]
        m.d.sync += [dst.eq(src) for dst, src in zip(d3, keep3)]
        (l3_3, ihl3, l4_3, tos3, proto3, tot3, udp_len3, csum_udp3, csum_tcp3,
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
                info.l4_csum.eq(Mux(udp3, csum_udp3, csum_tcp3)),
            ]
        return m
