"""HeaderRestore: puts the original lengths back into an RX frame's headers.

The decompression engine hands it the first 96 bytes of a frame (Ethernet, optional
VLAN tag, IPv4 header with options, the start of the L4 header; the UDP length field
ends at byte 83 at most) and the restored lengths. It writes the IP total length and
the UDP length and recomputes the IP header checksum from scratch (binding decision:
always fully recomputed). The L4 checksum is left alone: the transmitter already made
it right for the restored packet.

The checksum is a pipelined one's-complement adder tree over the frame's words 7..38,
each one summed or not by a mask of vlan and IHL (no stage of its own picks the IP
header out), so the path between two registers is at most one adder: inputs must stay
stable from ``start`` until ``done`` (``LATENCY`` cycles later), the way the engine's
pending-header registers do; ``o_data`` is the patched header (where each field goes
is a small function of vlan, IHL and udp), valid while ``done`` is high and as long
as the inputs stay put.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["HeaderRestore", "HEADER_BYTES"]

HEADER_BYTES = 96     # Ethernet + VLAN + 60-byte IP header + UDP length field fit in here.
_IP_WORDS = 30        # 60-byte maximum IPv4 header, as 16-bit words.
_FIRST_WORD = 7       # the header starts at byte 14 (word 7) or 18 (word 9)
_WINDOW_WORDS = 32    # words 7..38 hold it either way


def _in_header(i, ihl):
    """Word i of the IP header is summed: inside the header (ihl words of 4 bytes) and
    not the total length (word 1) or the checksum (word 5)."""
    if i < 0 or i >= _IP_WORDS or i in (1, 5):
        return C(0, 1)
    return i < 2 * ihl


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

        # The IP header's words lie among words 7..38 of the frame (byte 2j, 2j + 1 as
        # a big-endian word j; l3 / 2 = 7 or 9, up to 30 words). Each of those words
        # is summed or not by a mask that depends on vlan and ihl only (in the window
        # l3 / 2 .. l3 / 2 + 2 IHL, less the total-length and checksum words, whose new
        # values are added later): the mask folds into the first adders' LUTs, so no
        # stage of its own picks the window.
        words = []
        for j in range(_FIRST_WORD, _FIRST_WORD + _WINDOW_WORDS):
            i_plain, i_tagged = j - 7, j - 9       # index in the IP header (l3 = 14, 18)
            inc = Signal(name=f"inc{j}")
            m.d.comb += inc.eq(Mux(self.vlan, _in_header(i_tagged, self.ihl),
                                   _in_header(i_plain, self.ihl)))
            w = Signal(16, name=f"w{j}")
            m.d.comb += w.eq(Mux(inc, Cat(byte(2 * j + 1), byte(2 * j)), 0))
            words.append(w)

        # Stages 1..5: pairwise adder tree, one adder deep per stage (stage 1 adds
        # the masked input words).
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
        # Stage 6: add the restored total length; stage 7: fold twice and complement.
        # That is 7 stages; ``done`` comes after LATENCY = 8 (the inputs are held that
        # long anyway), one clock more than needed, which keeps the engine's timing.
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
        # position. The UDP length sits at l4 + 4, l4 = l3 + 4 * IHL. Which field goes
        # where depends on vlan, ihl and udp only: each byte's conditions are spelt out
        # as compares of those with constants (an adder of l3 and IHL in front of the
        # compares would map to carry chains, deeper than the small function it is).
        def at_l3(off, i):
            # l3 + off == i, l3 = 14 or 18
            return ((~self.vlan if 14 + off == i else C(0, 1))
                    | (self.vlan if 18 + off == i else C(0, 1)))

        def at_l4(off, i):
            # l3 + 4 IHL + off == i
            terms = []
            for l3v, sel in ((14, ~self.vlan), (18, self.vlan)):
                rest = i - off - l3v
                if rest >= 0 and rest % 4 == 0 and rest // 4 < 16:
                    terms.append(sel & (self.ihl == rest // 4))
            cond = C(0, 1)
            for t in terms:
                cond = cond | t
            return self.udp & cond

        for i in range(HEADER_BYTES):
            out = self.o_data.word_select(i, 8)
            with m.If(at_l3(2, i)):
                m.d.comb += out.eq(self.ip_total[8:])
            with m.Elif(at_l3(3, i)):
                m.d.comb += out.eq(self.ip_total[:8])
            with m.Elif(at_l3(10, i)):
                m.d.comb += out.eq(csum[8:])
            with m.Elif(at_l3(11, i)):
                m.d.comb += out.eq(csum[:8])
            with m.Elif(at_l4(4, i)):
                m.d.comb += out.eq(self.udp_len[8:])
            with m.Elif(at_l4(5, i)):
                m.d.comb += out.eq(self.udp_len[:8])
            with m.Else():
                m.d.comb += out.eq(byte(i))
        return m
