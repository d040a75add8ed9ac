"""HeaderRewrite: the header bytes a TX frame needs changed, as a list of byte patches.

Spec section 4 (TX). From the frame's parsed header, the partial checksums the engine
gathered while the frame streamed in, and the compressed length |C|:

- compressed: IP total length -= L - |C|; IP header checksum recomputed in full; UDP
  length = 8 + |C|; L4 checksum = that of the packet the receiver restores (original
  lengths, decoded payload D), a UDP checksum of 0 stays 0 and a computed 0 becomes
  0xFFFF;
- fall-back: DSCP := 0 (ECN kept), IP header checksum recomputed;
- compressed in version 3 (``v3``): the check word (hw/shim_check.py, over
  ``check_msg``, the 26-byte message golden.shim_check builds, whose zero byte 11 and
  magic byte 24 are taken as constants, not read) into payload bytes
  P+4..P+7, the placeholders the TX feeder left for it;
- otherwise nothing.

Checksum inputs (16-bit one's-complement sums, not complemented):
``ip_rest_sum`` = the IP header without its first two words (version/IHL/ToS, total
length) and its checksum; ``l4_hdr_sum`` = IP source and destination addresses plus
the L4 header without its checksum field; ``d_sum`` = the decoded payload D.

Output: ``PATCHES`` 16-bit word patches {en, beat, word, value}, ``LATENCY`` clocks
after ``start`` (inputs are sampled at ``start``; one frame may start every clock).
Every patched field is a 16-bit word at an even frame offset (l3 is 14 or 18 and l4 =
l3 + 4 IHL, as the PacketMatcher accepts them), so a patch names a beat and one of its
16 words; the ToS patch rewrites the version/IHL byte beside it with the value it
already has. Patches touch bytes before the payload offset P, and the check word's
P+4..P+7 (P <= 138: beats 0..4). The egress relies on where they can land to need only
two patch candidates per word: the IP fields (patches 0-2) in beat 0 on words 7..14,
the L4 fields (patches 3-4) in beats 1-2, the UDP length on odd words, the UDP checksum
on even words and the TCP checksum on odd words (l3 = l4 = P = 2 mod 4); the check
word (patches 5-6) in beats 1-4, its high half on an odd word, its low half on an even
one, never in beat 0 (P + 4 >= 46).
"""

from amaranth import *
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from .shim_check import MESSAGE_BYTES, ShimCheck
from .wire import SHIM_MAGIC_V3

__all__ = ["HeaderRewrite", "Patch", "PATCHES"]

Patch = data.StructLayout({
    "en": 1,
    "beat": 3,            # beat index of the word (offset // 32)
    "word": 4,            # 16-bit word of the beat (offset % 32 // 2)
    "value": 16,          # in lane order: bits [7:0] the byte at the even offset
})
# version/IHL+ToS, total length, IP checksum, UDP length, L4 checksum, and version 3's
# check word, high and low half
PATCHES = 7


class HeaderRewrite(wiring.Component):
    LATENCY = 5

    start: In(1)
    compressed: In(1)
    fallback: In(1)
    udp: In(1)
    l3: In(5)
    ihl: In(4)
    l4: In(7)
    proto: In(8)
    tos: In(8)
    ip_total_len: In(16)
    payload_len: In(16)
    c_len: In(17)
    l4_csum: In(16)        # the L4 checksum field as received
    ip_rest_sum: In(16)
    l4_hdr_sum: In(16)
    d_sum: In(16)
    v3: In(1)
    p: In(8)               # the payload offset P
    check_msg: In(8 * MESSAGE_BYTES)
    done: Out(1)
    patches: Out(data.ArrayLayout(Patch, PATCHES))

    def elaborate(self, platform):
        m = Module()
        # the message's zero byte and magic are constants (the finisher's message)
        m.submodules.check = check = ShimCheck(fixed={11: 0, 24: SHIM_MAGIC_V3})

        # R1: new field values and the offsets of the bytes to patch.
        v1 = Signal()
        comp1, fb1, udp1, zero_udp1 = Signal(), Signal(), Signal(), Signal()
        tot1, tos1, l4len1, udpl1 = Signal(16), Signal(8), Signal(16), Signal(16)
        verihl1 = Signal(8)
        proto1 = Signal(8)
        ipr1, l4h1, d1 = Signal(16), Signal(16), Signal(16)
        offs = [Signal(8, name=f"off{i}") for i in range(PATCHES)]     # even offsets
        m.d.sync += [
            v1.eq(self.start), comp1.eq(self.compressed), fb1.eq(self.fallback),
            udp1.eq(self.udp), zero_udp1.eq(self.udp & (self.l4_csum == 0)),
            tot1.eq(Mux(self.compressed, self.ip_total_len - self.payload_len + self.c_len,
                        self.ip_total_len)),
            tos1.eq(Mux(self.fallback, self.tos & 0x03, self.tos)),
            l4len1.eq(self.ip_total_len - (self.ihl << 2)),
            udpl1.eq(8 + self.c_len),
            verihl1.eq(Cat(self.ihl, C(4, 4))), proto1.eq(self.proto),
            ipr1.eq(self.ip_rest_sum), l4h1.eq(self.l4_hdr_sum), d1.eq(self.d_sum),
        ]
        # The check message registered here, so the CRC's XORs start at flip-flops; the
        # ShimCheck's word is registered at R3 (its LATENCY is 2) and carried to R5.
        v3_1 = Signal()
        msg1 = Signal(8 * MESSAGE_BYTES)
        m.d.sync += [v3_1.eq(self.v3), msg1.eq(self.check_msg)]
        m.d.comb += check.msg.eq(msg1)
        l4c_off = Mux(self.udp, 6, 16)
        m.d.sync += [
            offs[0].eq(self.l3), offs[1].eq(self.l3 + 2), offs[2].eq(self.l3 + 10),
            offs[3].eq(self.l4 + 4), offs[4].eq(self.l4 + l4c_off),
            offs[5].eq(self.p + 4), offs[6].eq(self.p + 6),
        ]

        def carry(signals, n):
            out = [Signal.like(s, name=f"{s.name}_{n}") for s in signals]
            m.d.sync += [o.eq(s) for o, s in zip(out, signals)]
            return out

        # R2: wide sums.
        ipacc2 = Signal(18)
        l4acc2 = Signal(18)
        m.d.sync += [
            ipacc2.eq(ipr1 + Cat(tos1, verihl1) + tot1),
            l4acc2.eq(l4h1 + proto1 + l4len1 + d1),
        ]
        v2, comp2, fb2, udp2, zu2, tot2, tos2, udpl2, verihl2, v3_2 = carry(
            [v1, comp1, fb1, udp1, zero_udp1, tot1, tos1, udpl1, verihl1, v3_1], 2)
        offs2 = carry(offs, 2)

        # R3: first fold.
        ipf3 = Signal(17)
        l4f3 = Signal(17)
        m.d.sync += [ipf3.eq(ipacc2[:16] + ipacc2[16:]), l4f3.eq(l4acc2[:16] + l4acc2[16:])]
        v3, comp3, fb3, udp3, zu3, tot3, tos3, udpl3, verihl3, v3_3 = carry(
            [v2, comp2, fb2, udp2, zu2, tot2, tos2, udpl2, verihl2, v3_2], 3)
        assert ShimCheck.LATENCY == 2
        ckw3 = check.word
        offs3 = carry(offs2, 3)

        # R4: last end-around carry and complement; UDP never sends a computed 0.
        ipc4 = Signal(16)
        l4c4 = Signal(16)
        ipsum = Signal(16)
        l4sum = Signal(16)
        m.d.comb += [ipsum.eq(ipf3[:16] + ipf3[16]), l4sum.eq(l4f3[:16] + l4f3[16])]
        # l4sum == 0xFFFF read from l4f3 beside the end-around adder (not behind it).
        l4ones = Signal()
        m.d.comb += l4ones.eq(Mux(l4f3[16], l4f3[:16] == 0xFFFE, l4f3[:16] == 0xFFFF))
        m.d.sync += [
            ipc4.eq(~ipsum),
            l4c4.eq(Mux(udp3 & l4ones, 0xFFFF, ~l4sum)),
        ]
        v4, comp4, fb4, udp4, zu4, tot4, tos4, udpl4, verihl4, v3_4, ckw4 = carry(
            [v3, comp3, fb3, udp3, zu3, tot3, tos3, udpl3, verihl3, v3_3, ckw3], 4)
        offs4 = carry(offs3, 4)

        # R5: the patch list; a word's high byte goes first on the wire (lane order).
        def lanes(v):
            return Cat(v[8:16], v[0:8])
        values = [Cat(verihl4, tos4), lanes(tot4), lanes(ipc4), lanes(udpl4), lanes(l4c4),
                  lanes(ckw4[16:32]), lanes(ckw4[0:16])]
        enables = [fb4, comp4, comp4 | fb4, comp4 & udp4, comp4 & ~zu4, comp4 & v3_4,
                   comp4 & v3_4]
        m.d.sync += self.done.eq(v4)
        for idx in range(PATCHES):
            p = self.patches[idx]
            m.d.sync += [
                p.en.eq(enables[idx]), p.beat.eq(offs4[idx][5:]), p.value.eq(values[idx]),
                p.word.eq(offs4[idx][1:5]),
            ]
        return m
