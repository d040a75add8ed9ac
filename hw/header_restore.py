"""HeaderRestore: puts the original lengths back into an RX frame's headers.

The decompression engine hands it the first 96 bytes of a frame (Ethernet, optional
VLAN tag, IPv4 header with options, the start of the L4 header; the UDP length field
ends at byte 83 at most) and the restored lengths. It writes the IP total length and
the UDP length and recomputes the IP header checksum from scratch (binding decision:
always fully recomputed). The L4 checksum is left alone: the transmitter already made
it right for the restored packet.

The checksum is a pipelined one's-complement adder tree, so the path between two
registers is at most one adder: inputs must stay stable from ``start`` until ``done``
(``LATENCY`` cycles later), the way the engine's pending-header registers do;
``o_data`` is the patched header, valid while ``done`` is high and as long as the
inputs stay put.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["HeaderRestore", "HEADER_BYTES"]

HEADER_BYTES = 96     # Ethernet + VLAN + 60-byte IP header + UDP length field fit in here.
_IP_WORDS = 30        # 60-byte maximum IPv4 header, as 16-bit words.


class HeaderRestore(wiring.Component):
    start: In(1)
    data: In(8 * HEADER_BYTES)
    vlan: In(1)          # IP header at byte 18 instead of 14
    ihl: In(4)           # 5..15 words of 4 bytes
    udp: In(1)           # patch the UDP length too
    ip_total: In(16)     # restored IP total length
    udp_len: In(16)      # restored UDP length (8 + L)
    done: Out(1)
    o_data: Out(8 * HEADER_BYTES)

    LATENCY = 8

    def elaborate(self, platform):
        m = Module()

        def byte(i):
            return self.data.word_select(i, 8)

        # Stage 0: pick the IP header window (l3 = 14 or 18), mask it to IHL words and
        # blank the total-length and checksum words (the new length is added later).
        words = []
        for i in range(_IP_WORDS):
            w = Signal(16, name=f"w{i}")
            if i in (1, 5):
                m.d.sync += w.eq(0)
            else:
                plain = Cat(byte(14 + 2 * i + 1), byte(14 + 2 * i))
                tagged = Cat(byte(18 + 2 * i + 1), byte(18 + 2 * i))
                m.d.sync += w.eq(Mux(i < 2 * self.ihl, Mux(self.vlan, tagged, plain), 0))
            words.append(w)

        # Stages 1..5: pairwise adder tree, one adder deep per stage.
        level = words
        stage = 0
        while len(level) > 1:
            stage += 1
            nxt = []
            for j in range(0, len(level), 2):
                s = Signal(len(level[j]) + 1, name=f"s{stage}_{j // 2}")
                if j + 1 < len(level):
                    m.d.sync += s.eq(level[j] + level[j + 1])
                else:
                    m.d.sync += s.eq(level[j])
                nxt.append(s)
            level = nxt
        assert stage == 5
        # Stage 6: add the restored total length; stages 7: fold twice and complement.
        total = Signal(22)
        m.d.sync += total.eq(level[0] + self.ip_total)
        fold1 = Signal(17)
        m.d.sync += fold1.eq(total[:16] + total[16:])
        csum = Signal(16)
        m.d.comb += csum.eq(~(fold1[:16] + fold1[16]))

        delay = self.start
        for i in range(self.LATENCY):
            d = Signal(name=f"start_d{i}")
            m.d.sync += d.eq(delay)
            delay = d
        m.d.comb += self.done.eq(delay)

        # Patch: every byte either kept or replaced by one of the three fields, chosen by
        # position. The UDP length sits at l4 + 4, l4 = l3 + 4 * IHL.
        l3 = Signal(5)
        l4 = Signal(7)
        m.d.comb += [
            l3.eq(Mux(self.vlan, 18, 14)),
            l4.eq(l3 + (self.ihl << 2)),
        ]
        for i in range(HEADER_BYTES):
            out = self.o_data.word_select(i, 8)
            with m.If(l3 + 2 == i):
                m.d.comb += out.eq(self.ip_total[8:])
            with m.Elif(l3 + 3 == i):
                m.d.comb += out.eq(self.ip_total[:8])
            with m.Elif(l3 + 10 == i):
                m.d.comb += out.eq(csum[8:])
            with m.Elif(l3 + 11 == i):
                m.d.comb += out.eq(csum[:8])
            with m.Elif(self.udp & (l4 + 4 == i)):
                m.d.comb += out.eq(self.udp_len[8:])
            with m.Elif(self.udp & (l4 + 5 == i)):
                m.d.comb += out.eq(self.udp_len[:8])
            with m.Else():
                m.d.comb += out.eq(byte(i))
        return m
