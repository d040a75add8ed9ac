"""Board self-test: on-chip frame generator and the reference model of what RX restores.

Every frame is drawn from xorshift32 generators, so the *same* frame sequence can be
rebuilt anywhere on the chip by another instance started from the same seeds:

- ``FrameGenerator`` (feeds TX): a ``FrameSource`` draws the frame parameters, a
  ``PayloadSum`` pre-pass runs one word generator over the payload to get its checksum
  (the L4 checksum sits in the header, which leaves before the payload), then a
  ``FrameEmitter`` with a second word generator emits the frame.
- ``ReferenceGenerator`` (feeds the checker): the same ``FrameSource`` sequence and a
  ``FrameEmitter`` whose word generator also runs every value through the TX datapath's
  own ``CompressionBlock``, giving the decoded payload D beside the original, and the
  compressed payload length |C| (to know whether TX fell back).

Frames (Ethernet II, IPv4 IHL 5, no VLAN), by ``kind``:
  0: UDP, ToS 0x28 (DSCP 10), gradient-like payload (exponents 112..127: every band);
  1: TCP, ToS 0x28, same payload mix;
  2: UDP, ToS 0x2C (DSCP 11): not eligible, must pass untouched;
  3: UDP, ToS 0x28, "dense" payload (|f| >= 1, Inf, NaN: tag 11 only): TX falls back.
n = 1..512 float32 values plus r = 0..3 tail bytes (L = 4n + r), with a random scale so
that short frames (which also fall back: the shim and tag word outweigh them) are common.
Headers and checksums (IP and L4) are correct, so the unchanged frames check too.

Payload words are 32 payload bytes (8 values) each, bytes past L zero; a frame's beat b
carries header bytes, then the payload shifted by the header length P (42 or 54).
"""

from amaranth import *
from amaranth.lib import data, fifo, stream, wiring
from amaranth.lib.wiring import In, Out

from .primitives import AxisRegisterSlice
from .wire import K_DEFAULT, TOS_DEFAULT, TOS_OTHER

__all__ = ["xorshift32", "FrameDesc", "CsumDesc", "GenBeat", "FrameSource", "WordGen",
           "PayloadSum", "FrameEmitter", "FrameGenerator", "ReferenceGenerator",
           "KIND_UDP", "KIND_TCP", "KIND_OTHER_DSCP", "KIND_DENSE", "LANE_SEEDS",
           "FRAME_SEED", "MAC_DST", "MAC_SRC", "IP_SRC", "IP_DST", "PORT_SRC", "PORT_DST"]

KIND_UDP, KIND_TCP, KIND_OTHER_DSCP, KIND_DENSE = 0, 1, 2, 3
LANE_SEEDS = [(0x9E3779B9 * (j + 1)) & 0xFFFFFFFF | 1 for j in range(8)]
FRAME_SEED = 0x2545F491
MAC_DST = bytes.fromhex("020000000002")
MAC_SRC = bytes.fromhex("020000000001")
IP_SRC = bytes([10, 0, 0, 1])
IP_DST = bytes([10, 0, 0, 2])
PORT_SRC, PORT_DST = 5000, 5001
TCP_ACK, TCP_FLAGS, TCP_WINDOW = 1, 0x5018, 0x2000   # data offset 5, PSH|ACK

FrameDesc = data.StructLayout({"kind": 2, "n": 10, "r": 2, "seq": 16})
CsumDesc = data.StructLayout({"desc": FrameDesc, "ip_csum": 16, "l4_csum": 16})
WordOut = data.StructLayout({"data": 256, "dec": 256, "gbytes": 6, "last": 1})
# What an emitter produces per beat: the AXI beat (data/keep/last), the same beat with
# the decoded payload (reference only), and per-frame facts the checker needs.
GenBeat = data.StructLayout({
    "data": 256, "dec": 256, "keep": 32, "last": 1,
    "kind": 2, "length": 12, "csize": 13,
})


def xorshift32(m, x, name):
    """One xorshift32 step of `x` (a 32-bit Value) through named intermediate Signals."""
    a = Signal(32, name=f"{name}_a")
    b = Signal(32, name=f"{name}_b")
    c = Signal(32, name=f"{name}_c")
    m.d.comb += [a.eq(x ^ (x << 13)[:32]), b.eq(a ^ (a >> 17)), c.eq(b ^ (b << 5)[:32])]
    return c


def _ones_add(a, b, width=16):
    """One's-complement add of two `width`-bit values (end-around carry)."""
    s = a + b
    return (s[:width] + s[width])[:width]


class FrameSource(wiring.Component):
    """The frame-parameter sequence: one draw per accepted frame."""

    o: Out(stream.Signature(FrameDesc))

    def elaborate(self, platform):
        m = Module()
        state = Signal(32, init=FRAME_SEED)
        seq = Signal(16)
        nxt = xorshift32(m, state, "frame_prng")
        raw_n = Signal(9)
        m.d.comb += raw_n.eq(state[2:11] >> state[11:13])   # random scale: short frames too
        m.d.comb += [
            self.o.valid.eq(1),
            self.o.payload.kind.eq(state[0:2]),
            self.o.payload.n.eq(raw_n + 1),
            self.o.payload.r.eq(state[13:15]),
            self.o.payload.seq.eq(seq),
        ]
        with m.If(self.o.ready):
            m.d.sync += [state.eq(nxt), seq.eq(seq + 1)]
        return m


class WordGen(wiring.Component):
    """Payload words of one frame after another, from 8 xorshift32 lanes.

    ``start`` takes {n, r, dense} when the previous frame's words are all issued; ``o``
    then gives ceil(L/32) words (the last with ``last``). With ``decode`` each value also
    goes through a CompressionBlock: ``dec`` is the word as RX restores it and ``gbytes``
    the size of this word's group (2 + widths; 0 when the word holds no value). The
    3-stage pipeline feeds a FIFO and issues only while the FIFO has room for what is in
    flight, so ``o.ready`` may drop at any time.
    """

    DEPTH = 16
    STAGES = 3

    def __init__(self, decode=False):
        self.decode = decode
        super().__init__({
            "start": In(stream.Signature(data.StructLayout({"n": 10, "r": 2, "dense": 1}))),
            "k": In(7, init=K_DEFAULT),
            "v2": In(1),                # the bounded codec (wire format version 2)
            "o": Out(stream.Signature(WordOut)),
        })

    def elaborate(self, platform):
        m = Module()
        lanes = [Signal(32, init=LANE_SEEDS[j], name=f"lane{j}") for j in range(8)]
        nxt = [xorshift32(m, lanes[j], f"lane{j}_prng") for j in range(8)]
        words_left = Signal(7)       # ceil(2051 / 32) = 65 at most
        # words_left != 0 and == 1 as registers, and the valid bytes of the frame's last
        # word (all 32 when L is a multiple of 32; every other word is full): the
        # issue decision and the byte mask then come straight from flip-flops.
        busy = Signal()
        last_word = Signal()
        tail_ok = Signal(32)

        vrem = Signal(11)            # values not yet issued
        dense = Signal()

        m.submodules.fifo = q = fifo.SyncFIFOBuffered(width=len(self.o.payload.as_value()),
                                                      depth=self.DEPTH)
        m.d.comb += [
            self.o.payload.eq(q.r_data),
            self.o.valid.eq(q.r_rdy),
            q.r_en.eq(self.o.ready),
        ]

        # A frame's parameters are latched first and set up the next cycle, so that the
        # drawing logic upstream and the setup arithmetic here are separate paths.
        loading = Signal()
        length = Signal(12)
        m.d.comb += self.start.ready.eq(~busy & ~loading)
        m.d.sync += loading.eq(0)
        with m.If(self.start.valid & self.start.ready):
            m.d.sync += [
                loading.eq(1),
                length.eq(Cat(self.start.payload.r, self.start.payload.n)),
                vrem.eq(self.start.payload.n),
                dense.eq(self.start.payload.dense),
            ]
        # The last word's valid bytes as a table of length[:5]: one LUT per bit (a
        # thermometer of compares ripples).
        tail_now = Signal(32)
        with m.Switch(length[:5]):
            for v in range(32):
                with m.Case(v):
                    m.d.comb += tail_now.eq((1 << v) - 1 if v else 0xFFFFFFFF)
        with m.If(loading):
            m.d.sync += [
                words_left.eq((length + 31) >> 5),
                busy.eq(length != 0),
                last_word.eq((length != 0) & (length <= 32)),
                tail_ok.eq(tail_now),
            ]

        issue = Signal()
        # Level + everything in flight must fit: stages hold at most STAGES words. The
        # FIFO's level is an adder behind its registers; `level` keeps the same count
        # in a register of its own.
        level = Signal(range(self.DEPTH + 1))
        m.d.sync += level.eq(level + (q.w_en & q.w_rdy) - (q.r_en & q.r_rdy))
        m.d.comb += issue.eq(busy & (level <= self.DEPTH - self.STAGES - 1))

        # Stage 1: values (exponent mapped to the frame's mix), bytes past L cleared.
        s1_valid = Signal()
        s1_vals = [Signal(32, name=f"s1_val{j}") for j in range(8)]
        s1_isval = Signal(8)
        s1_last = Signal()
        m.d.sync += s1_valid.eq(issue)
        vals = []
        for j in range(8):
            r = lanes[j]
            e = Signal(8, name=f"exp{j}")
            # Gradient-like: 2^-15 .. 2^0 (every band at k = 10); dense: 1 .. 2^7, and
            # Inf/NaN when the 3 exponent bits are all ones.
            m.d.comb += e.eq(Mux(dense, Mux(r[23:26] == 7, 255, 127 + r[23:26]),
                                 112 + r[23:27]))
            v = Signal(32, name=f"val{j}")
            mask = Cat(*((~last_word | tail_ok[4 * j + b]).replicate(8) for b in range(4)))
            m.d.comb += v.eq(Cat(r[0:23], e, r[31]) & mask)
            vals.append(v)
        with m.If(issue):
            m.d.sync += [
                words_left.eq(words_left - 1),
                busy.eq(~last_word),
                last_word.eq(words_left == 2),
                vrem.eq(Mux(vrem >= 8, vrem - 8, 0)),
                s1_last.eq(last_word),
                s1_isval.eq(Cat(*(vrem > j for j in range(8)))),
            ]
            for j in range(8):
                m.d.sync += [s1_vals[j].eq(vals[j]), lanes[j].eq(nxt[j])]

        # Stage 2: the codec's raw outputs (reference only), registered right behind
        # the CompressionBlocks; the lane selects come in stage 3.
        s2_valid = Signal()
        s2_last = Signal()
        s2_data = Signal(256)
        s2_isval = Signal(8)
        s2_cbtag = [Signal(2, name=f"s2_cbtag{j}") for j in range(8)]
        s2_cbw = [Signal(3, name=f"s2_cbw{j}") for j in range(8)]
        s2_thr = [Signal(5, name=f"s2_thr{j}") for j in range(8)]
        s2_kexp = Signal(8)
        s2_half = Signal(8)
        m.d.sync += [s2_valid.eq(s1_valid), s2_last.eq(s1_last),
                     s2_data.eq(Cat(*s1_vals)), s2_isval.eq(s1_isval)]
        if self.decode:
            from .compression_block import CompressionBlock, decode_threshold
            for j in range(8):
                cb = m.submodules[f"cb{j}"] = CompressionBlock()
                m.d.comb += [cb.value.eq(s1_vals[j]), cb.k.eq(self.k), cb.v2.eq(self.v2)]
                # The tag, not the decoded value: decoding behind the tag register
                # keeps both sides within the level budget (as the CompressionUnit,
                # which also registers the decode threshold with the tag).
                m.d.sync += [s2_cbtag[j].eq(cb.tag), s2_cbw[j].eq(cb.width)]
                thr, kexp, half = decode_threshold(m, s1_vals[j], cb.tag, C(0, 1), self.v2,
                                                   self.k, f"s1_dth{j}")
                m.d.sync += [s2_thr[j].eq(thr), s2_kexp[j].eq(kexp), s2_half[j].eq(half)]

        # Stage 3: values restore through the codec, the tail bytes (and zeros) stay
        # raw; the group's size; into the FIFO.
        s3_valid = Signal()
        s3 = Signal(WordOut)
        widths = [Mux(s2_isval[j], s2_cbw[j], 0) for j in range(8)]
        wsum_a = Signal(5)
        wsum_b = Signal(5)
        m.d.comb += [wsum_a.eq(widths[0] + widths[1] + widths[2] + widths[3]),
                     wsum_b.eq(widths[4] + widths[5] + widths[6] + widths[7])]
        if self.decode:
            from .compression_block import decoded_value
            dec = Cat(*(Mux(s2_isval[j],
                            decoded_value(m, s2_data[32 * j:32 * j + 32], s2_cbtag[j], f"s2_dec{j}",
                                          pre=(s2_thr[j], s2_kexp[j], s2_half[j])),
                            s2_data[32 * j:32 * j + 32])
                        for j in range(8)))
        else:
            dec = s2_data
        m.d.sync += [
            s3_valid.eq(s2_valid),
            s3.data.eq(s2_data), s3.dec.eq(dec), s3.last.eq(s2_last),
            s3.gbytes.eq(Mux(s2_isval[0], 2 + wsum_a + wsum_b, 0)),
        ]
        m.d.comb += [q.w_data.eq(s3), q.w_en.eq(s3_valid)]
        return m


class PayloadSum(wiring.Component):
    """Pre-pass: a frame's payload checksum, then its IP and L4 header checksums."""

    i: In(stream.Signature(FrameDesc))
    o: Out(stream.Signature(CsumDesc))

    def elaborate(self, platform):
        m = Module()
        m.submodules.words = wg = WordGen(decode=False)
        desc = Signal(FrameDesc)
        acc = Signal(32)
        # Lane sums of a word: 16 little-endian 16-bit lanes, two registered stages.
        p1_valid, p2_valid = Signal(), Signal()
        p1 = [Signal(18, name=f"p1_{i}") for i in range(4)]
        p2 = Signal(20)
        lanes = [wg.o.payload.data[16 * i:16 * i + 16] for i in range(16)]
        take = Signal()
        m.d.sync += [p1_valid.eq(take), p2_valid.eq(p1_valid)]
        for i in range(4):
            m.d.sync += p1[i].eq(lanes[4 * i] + lanes[4 * i + 1] + lanes[4 * i + 2] + lanes[4 * i + 3])
        m.d.sync += p2.eq(p1[0] + p1[1] + p1[2] + p1[3])
        with m.If(p2_valid):
            m.d.sync += acc.eq(acc + p2)

        length = Signal(12)
        m.d.comb += length.eq(Cat(desc.r, desc.n))
        tcp = desc.kind == KIND_TCP
        proto = Signal(8)
        tos = Signal(8)
        m.d.comb += [proto.eq(Mux(tcp, 6, 17)),
                     tos.eq(Mux(desc.kind == KIND_OTHER_DSCP, TOS_OTHER, TOS_DEFAULT))]
        l4len = Signal(12)
        m.d.comb += l4len.eq(length + Mux(tcp, 20, 8))
        ip_base = 0x4000 + 0x0A00 + 0x0001 + 0x0A00 + 0x0002   # flags (DF) + addresses
        ip_sum = Signal(20)
        l4_sum = Signal(20)
        addr_sum = 0x0A00 + 0x0001 + 0x0A00 + 0x0002
        udp_hdr = PORT_SRC + PORT_DST                       # + length (twice: pseudo + UDP)
        tcp_hdr = PORT_SRC + PORT_DST + 0x0001 + (TCP_ACK >> 16) + (TCP_ACK & 0xFFFF) \
            + TCP_FLAGS + TCP_WINDOW                        # + seq high word (= seq)
        # The header sums depend on desc only, which holds from SUM on: two register
        # stages worked out every clock have them ready by FOLD1 (three clocks at least
        # after desc loads), so FOLD1 only copies them.
        a_tcp = Signal()
        a_tos, a_proto = Signal(8), Signal(8)
        a_l4len = Signal(12)
        a_seq = Signal(16)
        ip_pre = Signal(20)
        l4_pre = Signal(20)
        m.d.sync += [a_tcp.eq(tcp), a_tos.eq(tos), a_proto.eq(proto), a_l4len.eq(l4len),
                     a_seq.eq(desc.seq)]
        m.d.sync += [
            ip_pre.eq(ip_base + Cat(a_tos, C(0x45, 8)) + (a_l4len + 20)
                      + a_seq + Cat(a_proto, C(0x40, 8))),
            l4_pre.eq(addr_sum + a_proto + Mux(a_tcp, a_l4len + tcp_hdr + a_seq,
                                                a_l4len + a_l4len + udp_hdr)),
        ]
        fold1 = Signal(17)
        pay_be = Signal(16)
        csum_ip = Signal(16)
        csum_l4 = Signal(16)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.i.ready.eq(wg.start.ready)
                m.d.comb += [wg.start.valid.eq(self.i.valid),
                             wg.start.payload.n.eq(self.i.payload.n),
                             wg.start.payload.r.eq(self.i.payload.r),
                             wg.start.payload.dense.eq(self.i.payload.kind == KIND_DENSE)]
                with m.If(self.i.valid & wg.start.ready):
                    m.d.sync += [desc.eq(self.i.payload), acc.eq(0)]
                    m.next = "SUM"
            with m.State("SUM"):
                m.d.comb += [wg.o.ready.eq(1), take.eq(wg.o.valid)]
                with m.If(wg.o.valid & wg.o.payload.last):
                    m.next = "DRAIN1"
            with m.State("DRAIN1"):     # the last word is in p1
                m.next = "DRAIN2"
            with m.State("DRAIN2"):     # ... in p2
                m.next = "FOLD1"
            with m.State("FOLD1"):      # ... in acc
                m.d.sync += [
                    fold1.eq(acc[:16] + acc[16:]), ip_sum.eq(ip_pre), l4_sum.eq(l4_pre),
                ]
                m.next = "FOLD2"
            with m.State("FOLD2"):
                p = _ones_add(fold1[:16], fold1[16])
                m.d.sync += pay_be.eq(Cat(p[8:16], p[0:8]))   # little- to big-endian words
                m.next = "FOLD3"
            with m.State("FOLD3"):
                ip_f = Signal(17)
                l4_f = Signal(18)
                m.d.comb += [ip_f.eq(ip_sum[:16] + ip_sum[16:]),
                             l4_f.eq(l4_sum[:16] + l4_sum[16:] + pay_be)]
                m.d.sync += [csum_ip.eq(ip_f[:16] + ip_f[16]), l4_sum.eq(l4_f)]
                m.next = "FOLD4"
            with m.State("FOLD4"):
                l4_g = Signal(17)
                m.d.comb += l4_g.eq(l4_sum[:16] + l4_sum[16:])
                m.d.sync += csum_l4.eq(l4_g[:16] + l4_g[16])
                m.next = "OUT"
            with m.State("OUT"):
                l4c = Signal(16)
                # A computed UDP checksum of 0 is sent as 0xFFFF (0 means "none").
                m.d.comb += l4c.eq(~csum_l4)
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.payload.desc.eq(desc),
                    self.o.payload.ip_csum.eq(~csum_ip),
                    self.o.payload.l4_csum.eq(Mux(~tcp & (l4c == 0), 0xFFFF, l4c)),
                ]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m


def _be16(v):
    """A 16-bit value as two frame bytes, most significant first."""
    return [v[8:16], v[0:8]]


def _const_bytes(bs):
    return [C(b, 8) for b in bs]


class FrameEmitter(wiring.Component):
    """Frames as 32-byte beats from {desc, checksums}; with ``decode`` also the beat
    with the payload as RX restores it, and |C| on the last beat."""

    def __init__(self, decode=False):
        self.decode = decode
        super().__init__({
            "i": In(stream.Signature(CsumDesc)),
            "k": In(7, init=K_DEFAULT),
            "v2": In(1),
            "o": Out(stream.Signature(GenBeat)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.words = wg_fifo = WordGen(decode=self.decode)
        m.d.comb += [wg_fifo.k.eq(self.k), wg_fifo.v2.eq(self.v2)]
        # A register slice between the word FIFO and the beat logic: the FIFO's read
        # enable then comes from a flip-flop, not through the beat decision.
        m.submodules.wbuf = wg = AxisRegisterSlice(WordOut)
        wiring.connect(m, wg_fifo.o, wg.i)
        d = Signal(CsumDesc)
        length = Signal(12)
        tcp = Signal()
        beats = Signal(7)            # beats in this frame, minus one
        words = Signal(7)            # payload words in this frame
        last_keep = Signal(32)
        frame_len = Signal(13)
        b = Signal(7)                # beat index
        wt = Signal(7)               # words taken
        prev = Signal(256)
        prev_dec = Signal(256)
        csum_acc = Signal(13)
        # This beat takes a payload word: b != 0 and words remain. Kept as a register
        # (updated with b and wt) so that the FIFO's read enable is two LUTs deep.
        need = Signal()

        desc = d.desc
        tos = Signal(8)
        proto = Signal(8)
        m.d.comb += [tos.eq(Mux(desc.kind == KIND_OTHER_DSCP, TOS_OTHER, TOS_DEFAULT)),
                     proto.eq(Mux(tcp, 6, 17))]
        totlen = Signal(16)
        l4len = Signal(16)
        m.d.comb += [l4len.eq(length + Mux(tcp, 20, 8)), totlen.eq(l4len + 20)]
        common = (_const_bytes(MAC_DST) + _const_bytes(MAC_SRC) + _const_bytes([0x08, 0x00, 0x45])
                  + [tos] + _be16(totlen) + _be16(desc.seq) + _const_bytes([0x40, 0x00, 0x40])
                  + [proto] + _be16(d.ip_csum) + _const_bytes(IP_SRC + IP_DST)
                  + _const_bytes(PORT_SRC.to_bytes(2, "big") + PORT_DST.to_bytes(2, "big")))
        udp_rest = _be16(l4len) + _be16(d.l4_csum)
        tcp_rest = (_be16(desc.seq) + _const_bytes([0, 1]) + _const_bytes(TCP_ACK.to_bytes(4, "big"))
                    + _const_bytes(TCP_FLAGS.to_bytes(2, "big") + TCP_WINDOW.to_bytes(2, "big"))
                    + _be16(d.l4_csum) + _const_bytes([0, 0]))
        assert len(common) == 38 and len(udp_rest) == 4 and len(tcp_rest) == 16
        hdr0 = Signal(256)            # frame bytes 0..31
        hdr1_udp = Signal(80)         # frame bytes 32..41
        hdr1_tcp = Signal(176)        # frame bytes 32..53
        m.d.comb += [hdr0.eq(Cat(*common[:32])), hdr1_udp.eq(Cat(*(common[32:] + udp_rest))),
                     hdr1_tcp.eq(Cat(*(common[32:] + tcp_rest)))]

        o_valid = Signal()
        o = Signal(GenBeat)
        m.d.comb += [self.o.valid.eq(o_valid), self.o.payload.eq(o)]
        free = ~o_valid | self.o.ready
        with m.If(self.o.ready):
            m.d.sync += o_valid.eq(0)

        def place(lo_prev, word, first):
            """Beat = [P mod 32 bytes: header tail on beat 1, else the previous word's
            end] + [the start of the current word]."""
            udp = Cat(Mux(first, hdr1_udp, lo_prev[256 - 80:]), word[:256 - 80])
            tcpv = Cat(Mux(first, hdr1_tcp, lo_prev[256 - 176:]), word[:256 - 176])
            return Mux(tcp, tcpv, udp)

        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.i.ready.eq(wg_fifo.start.ready)
                m.d.comb += [wg_fifo.start.valid.eq(self.i.valid),
                             wg_fifo.start.payload.n.eq(self.i.payload.desc.n),
                             wg_fifo.start.payload.r.eq(self.i.payload.desc.r),
                             wg_fifo.start.payload.dense.eq(self.i.payload.desc.kind == KIND_DENSE)]
                with m.If(self.i.valid & wg_fifo.start.ready):
                    m.d.sync += [d.eq(self.i.payload), b.eq(0), wt.eq(0), csum_acc.eq(0),
                                 need.eq(0),
                                 length.eq(Cat(self.i.payload.desc.r, self.i.payload.desc.n)),
                                 tcp.eq(self.i.payload.desc.kind == KIND_TCP)]
                    m.next = "SETUP"
            with m.State("SETUP"):
                m.d.sync += frame_len.eq(length + Mux(tcp, 54, 42))
                m.next = "SETUP2"
            with m.State("SETUP2"):
                m.d.sync += [
                    beats.eq((frame_len - 1) >> 5),
                    words.eq((length + 31) >> 5),
                    last_keep.eq(Mux(frame_len[:5] == 0, 0xFFFFFFFF,
                                     Cat(*(frame_len[:5] > i for i in range(32))))),
                ]
                m.next = "RUN"
            with m.State("RUN"):
                go = Signal()
                m.d.comb += [go.eq(free & (~need | wg.o.valid)), wg.o.ready.eq(go & need)]
                word = Mux(need, wg.o.payload.data, 0)
                word_dec = Mux(need, wg.o.payload.dec, 0)
                last = b == beats
                gb = Mux(need, wg.o.payload.gbytes, 0)
                with m.If(go):
                    m.d.sync += [
                        o_valid.eq(1),
                        o.data.eq(Mux(b == 0, hdr0, place(prev, word, b == 1))),
                        o.dec.eq(Mux(b == 0, hdr0, place(prev_dec, word_dec, b == 1))),
                        o.keep.eq(Mux(last, last_keep, 0xFFFFFFFF)),
                        o.last.eq(last),
                        o.kind.eq(desc.kind),
                        o.length.eq(length),
                        # |C| = shim + groups + tail bytes (valid on the last beat).
                        o.csize.eq(4 + csum_acc + gb + desc.r),
                        b.eq(b + 1),
                        csum_acc.eq(csum_acc + gb),
                        need.eq(wt + need != words),
                    ]
                    with m.If(need):
                        m.d.sync += [prev.eq(wg.o.payload.data), prev_dec.eq(wg.o.payload.dec),
                                     wt.eq(wt + 1)]
                    with m.If(last):
                        m.next = "IDLE"
        return m


class FrameGenerator(wiring.Component):
    """The frames the self-test sends into TX (``o.payload.dec`` equals ``data``)."""

    o: Out(stream.Signature(GenBeat))

    def elaborate(self, platform):
        m = Module()
        m.submodules.source = src = FrameSource()
        m.submodules.prepass = pre = PayloadSum()
        m.submodules.emitter = emit = FrameEmitter(decode=False)
        wiring.connect(m, src.o, pre.i)
        wiring.connect(m, pre.o, emit.i)
        wiring.connect(m, emit.o, wiring.flipped(self.o))
        return m


class ReferenceGenerator(wiring.Component):
    """The same frame sequence with the decoded payload and |C| for the checker. Header
    checksum fields are zero here: the checker verifies checksums on the frame itself."""

    k: In(7, init=K_DEFAULT)
    v2: In(1)                   # the TX engine's codec: 1 the bounded one (version 2)
    o: Out(stream.Signature(GenBeat))

    def elaborate(self, platform):
        m = Module()
        m.submodules.source = src = FrameSource()
        m.submodules.emitter = emit = FrameEmitter(decode=True)
        m.d.comb += [
            emit.k.eq(self.k),
            emit.v2.eq(self.v2),
            emit.i.valid.eq(src.o.valid),
            emit.i.payload.desc.eq(src.o.payload),
            src.o.ready.eq(emit.i.ready),
        ]
        wiring.connect(m, emit.o, wiring.flipped(self.o))
        return m
