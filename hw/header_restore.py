"""HeaderRestore: the restored IP header checksum of an RX frame, summed as it arrives.

The decompression engine writes the IP total length and the UDP length of a
decompressed frame back to their original values, so the IP header checksum has to be
recomputed from scratch (binding decision: always fully recomputed). The L4 checksum is
left alone: the transmitter already made it right for the restored packet. This block
computes that checksum; the engine puts the three fields on their byte lanes as the
header beats go out (``patch_lanes`` says where), so no copy of the header is patched.

The IP header (Ethernet 14 or 18 bytes with a VLAN tag, then up to 60 bytes) lies in the
frame's first three beats. The engine shows the block every beat it holds, with its
number (``beat_sel``, one-hot: beats 0, 1, 2; later beats are ignored) and whether its
bytes 12-13 are a VLAN tag's 0x8100 (``beat_vlan``: worked out by the engine before its
input register, so that beat 0's mask is one LUT from registers). Each beat's
sixteen big-endian 16-bit words are summed or not by a mask (in the IP header, and not
the total-length or checksum word), through a pipelined adder tree one adder deep per
stage, into a per-frame accumulator (cleared by beat 0). The mask of beat 0 depends on
its own VLAN tag (bytes 12-13); those of beats 1 and 2 on the header length, taken from
beat 0 into registers as it passes.

``start`` (the frame is decompressed, ``ip_total`` is the restored total length and
stays put until ``done``): the accumulated sum plus ``ip_total`` is folded twice and
complemented; ``csum`` is valid from ``done`` (``LATENCY`` cycles after ``start``) until
the next ``start``. ``start`` must come at least ``TREE_DEPTH`` + 1 cycles after the
frame's beat 2 (or its last beat) was shown, so that the beat's sum has reached the
accumulator; the engine's MATCH/CHECK/ACT steps take longer than that.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["HeaderRestore", "HEADER_BEATS", "patch_lanes"]

HEADER_BEATS = 3      # Ethernet + VLAN + 60-byte IP header + UDP length field: bytes 0..83
_BEAT_BYTES = 32
_WORDS = _BEAT_BYTES // 2


def _beat0_words(vlan):
    """Words of beat 0 (frame words 0..15) summed: the IP header from word l3 / 2 (7 or
    9; it is at least 10 words long, so it runs past the beat), less the total length
    (IP word 1) and the checksum (IP word 5)."""
    first = 9 if vlan else 7
    return [w for w in range(first, _WORDS) if w - first not in (1, 5)]


def patch_lanes(vlan, ihl, udp):
    """Where the restored fields go, for constant vlan, ihl, udp: a list of
    (byte position in the frame, field, which byte) with field "total" (IP total
    length, at l3 + 2), "csum" (IP header checksum, at l3 + 10) or "udp" (UDP length,
    at l4 + 4, UDP only); which byte 1 is the high one (big-endian)."""
    l3 = 18 if vlan else 14
    l4 = l3 + 4 * ihl
    out = [(l3 + 2, "total", 1), (l3 + 3, "total", 0), (l3 + 10, "csum", 1),
           (l3 + 11, "csum", 0)]
    if udp:
        out += [(l4 + 4, "udp", 1), (l4 + 5, "udp", 0)]
    return out


class HeaderRestore(wiring.Component):
    beat: In(8 * _BEAT_BYTES)
    beat_valid: In(1)
    beat_sel: In(HEADER_BEATS)   # one-hot: which of the frame's first beats this is
    beat_vlan: In(1)             # bytes 12-13 of the beat are 0x8100 (read on beat 0)
    start: In(1)
    ip_total: In(16)             # restored IP total length
    done: Out(1)
    csum: Out(16)

    TREE_DEPTH = 4               # adder stages from a beat to its 16-word sum
    LATENCY = 3

    def elaborate(self, platform):
        m = Module()

        def byte(i):
            return self.beat.word_select(i, 8)

        sel = self.beat_sel
        # Beat 0's VLAN tag, and its header length as the masks of beats 1 and 2:
        # frame word 16 b + i is in the IP header iff it is below l3 / 2 + 2 IHL.
        vlan_now = self.beat_vlan
        ihl_now = Signal(4)
        m.d.comb += ihl_now.eq(Mux(vlan_now, byte(18)[:4], byte(14)[:4]))
        m1 = Signal(_WORDS)
        m2 = Signal(_WORDS)
        with m.If(self.beat_valid & sel[0]):
            for i in range(_WORDS):
                m.d.sync += [
                    m1[i].eq(Mux(vlan_now, 16 + i < 9 + 2 * ihl_now, 16 + i < 7 + 2 * ihl_now)),
                    m2[i].eq(Mux(vlan_now, 32 + i < 9 + 2 * ihl_now, 32 + i < 7 + 2 * ihl_now)),
                ]
        in_plain = _beat0_words(False)
        in_tagged = _beat0_words(True)
        words = []
        for i in range(_WORDS):
            b0 = Mux(vlan_now, int(i in in_tagged), int(i in in_plain))
            inc = Signal(name=f"inc{i}")
            m.d.comb += inc.eq((sel[0] & b0) | (sel[1] & m1[i]) | (sel[2] & m2[i]))
            w = Signal(16, name=f"w{i}")
            m.d.comb += w.eq(Mux(inc, Cat(byte(2 * i + 1), byte(2 * i)), 0))
            words.append(w)

        # Pipelined adder tree, one adder deep per stage; a beat's valid and "beat 0"
        # flag go along.
        tv = self.beat_valid & (sel != 0)
        tf = sel[0]
        level = words
        for stage in range(self.TREE_DEPTH):
            nxt = []
            for j in range(0, len(level), 2):
                s = Signal(len(level[j]) + 1, name=f"s{stage + 1}_{j // 2}")
                m.d.sync += s.eq(level[j] + level[j + 1])
                nxt.append(s)
            level = nxt
            v, f = Signal(name=f"tv{stage + 1}"), Signal(name=f"tf{stage + 1}")
            m.d.sync += [v.eq(tv), f.eq(tf)]
            tv, tf = v, f
        assert len(level) == 1
        acc = Signal(21)          # at most 30 words of 16 bits
        with m.If(tv):
            m.d.sync += acc.eq(Mux(tf, 0, acc) + level[0])

        # start: add the restored total length, fold twice, complement.
        total = Signal(22)
        fold1 = Signal(17)
        d1, d2 = Signal(), Signal()
        m.d.sync += [d1.eq(self.start), d2.eq(d1), self.done.eq(d2)]
        with m.If(self.start):
            m.d.sync += total.eq(acc + self.ip_total)
        m.d.sync += fold1.eq(total[:16] + total[16:])
        with m.If(d2):
            m.d.sync += self.csum.eq(~(fold1[:16] + fold1[16]))
        return m
