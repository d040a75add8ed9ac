"""ShortFrameEngine: TX for frames of one 512-bit beat, a frame every clock.

At 512 bits a 64-byte frame is one beat, and 100 GbE brings one every 1.7 clocks at
250 MHz. A 256-bit engine lane spends about 9 clocks on such a frame (its stages are
built for streams of groups: parse, then compress, then rewrite the headers, then the
check word), so two lanes take one every 4.5 (docs/engine-lanes.md). This engine does
TX's whole work on a frame that fits in one beat in one pipeline that never stalls: a
frame in every clock, out 17 clocks later, byte for byte golden's ``tx_frame``.

Frames it takes (``tx_short_takes``, told from the beat, which is the frame's last):
IPv4 behind no or one VLAN tag, IHL 5, and UDP or TCP with a data offset of 5, so the
payload starts at one of four fixed bytes (42, 46, 54, 58) and holds at most 22 bytes
(5 values and a 2-byte tail). Everything else is left to the engine lanes (IP or TCP
options leave no room for a payload worth compressing in 64 bytes). Inside, every rule
of the TX engine applies: eligibility (lengths, fragments, DSCP, the configuration, the
bad flag), compression through the CompressionUnit, the fall-back (DSCP cleared), the
bypass.

Pipeline (clock 0: the frame is taken; every value below is registered at the end of
its clock and carried on by plain delay registers):
  1  the beat, an aligned view (the IP header at byte 14 with or without a VLAN tag),
     the frame's length from ``keep``, the configuration;
  1  the IP header's sum (a Checksum, its total length, checksum and ToS bytes masked)
     -> 8;
  2  header tests, the IP total length;  3  lengths, the payload's 24-byte window;
  3  the CompressionUnit (count, tail from L) -> its decoded payload at 5 (a Checksum
     -> 12) and the group at 8; the pseudo-header and L4 header's sum -> 10;
  9  |C| = shim + group; 9 the check word (ShimCheck) -> 11;
  10-12  the IP checksums (compressed: the new total length; fall-back: the ToS without
     its DSCP);  12-14  the L4 checksum over the original lengths and D;
  15  the output beat from the three forms (bypassed, fall-back, compressed) -> 16.
Flow control is by credit: a frame is taken only while fewer than ``CREDITS`` frames are
in the pipeline or the output FIFO, so the pipeline never waits and the FIFO never
overflows.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axis import axis_signature, beat_layout
from .checksum import Checksum
from .compression_unit import LATENCY as CU_LATENCY
from .compression_unit import CompressionUnit
from .corundum.engine_path import engine_ports
from .primitives import StreamFifo, keep_count
from .shim_check import ShimCheck
from .tx.ingress import k_in_range
from .wire import SHIM_MAGIC, SHIM_MAGIC_V2, SHIM_MAGIC_V3

__all__ = ["ShortFrameEngine", "tx_short_takes", "SHORT_BEAT_BITS", "LATENCY"]

SHORT_BEAT_BITS = 512
_BYTES = SHORT_BEAT_BITS // 8
_IPPROTO_TCP, _IPPROTO_UDP = 6, 17
# Frames in flight (pipeline and output FIFO) before the input waits: the pipeline's
# latency and the FIFO's own, with room to spare, so a frame a clock goes through.
CREDITS = 32
LATENCY = 17                # clocks from a frame taken to its beat in the output FIFO
# Stages (see the module docstring).
_CU_IN, _IP_SUM, _HDR_SUM, _D_SUM = 3, 1, 3, 5
_GROUP = _CU_IN + CU_LATENCY                     # 8
_CLEN = _GROUP + 1                               # 9
_OUT = 15


def tx_short_takes(data):
    """1 if the one-beat frame whose beat is ``data`` (at least 51 bytes read) has the
    headers the ShortFrameEngine handles: IPv4 behind no or one VLAN tag, IHL 5, UDP or
    TCP with a data offset of 5. Whether it is eligible is the engine's to decide."""
    def byte(j):
        return data.word_select(j, 8)

    def be16(j):
        return Cat(byte(j + 1), byte(j))

    def shape(l3):
        proto = byte(l3 + 9)
        return ((byte(l3) == 0x45)
                & ((proto == _IPPROTO_UDP)
                   | ((proto == _IPPROTO_TCP) & (byte(l3 + 32)[4:] == 5))))
    plain = be16(12) == 0x0800
    vlan = (be16(12) == 0x8100) & (be16(16) == 0x0800)
    return (plain & shape(14)) | (vlan & shape(18))


class _Delays:
    """Values by the clock they are valid in; ``at(name, clock)`` gives one carried on
    to a later clock through delay registers (made once, shared)."""

    def __init__(self, m):
        self.m, self.vals = m, {}

    def put(self, name, sig, clock):
        self.vals[name] = {clock: sig}
        return sig

    def at(self, name, clock):
        chain = self.vals[name]
        last = max(chain)
        if clock < last and clock not in chain:
            raise ValueError(f"{name} is valid from clock {min(chain)}, not {clock}")
        while last < clock:
            src = chain[last]
            r = Signal.like(src, name=f"{name}_{last + 1}")
            self.m.d.sync += r.eq(src)
            last += 1
            chain[last] = r
        return chain[clock]


def _reg(m, value, name, valid=False):
    r = Signal(Value.cast(value).shape(), name=name, reset_less=not valid)
    m.d.sync += r.eq(value)
    return r


def _b8(x):
    """``x`` (at most 8 bits) as a byte."""
    return Cat(x, C(0, 8 - len(x)))


def _bytes(sig):
    return [sig.word_select(j, 8) for j in range(len(sig) // 8)]


class ShortFrameEngine(wiring.Component):
    """``i``: one-beat frames (each beat has ``last``) that ``tx_short_takes``; the
    configuration ports as the TX engine's, sampled with the frame; ``o``: the frames
    as TX sends them; counters as the TX engine's (``dropped`` stays 0: a one-beat
    frame is never too long)."""

    def __init__(self):
        # The TX engine's own configuration and counter ports, under their names.
        from ..rtl.blocks import engines
        super().__init__({"i": In(axis_signature(SHORT_BEAT_BITS)),
                          "o": Out(axis_signature(SHORT_BEAT_BITS)),
                          **engine_ports(engines()["tx"].load())})

    latency = LATENCY

    def elaborate(self, platform):
        m = Module()
        d = _Delays(m)

        # Credits: frames taken and not yet out of the FIFO.
        held = Signal(range(CREDITS + 1))
        m.submodules.outq = outq = StreamFifo(beat_layout(SHORT_BEAT_BITS), 2 * CREDITS,
                                              fast=True)
        take = Signal()
        popped = outq.o.valid & outq.o.ready
        m.d.comb += [self.i.ready.eq(held < CREDITS), take.eq(self.i.valid & self.i.ready)]
        m.d.sync += held.eq(held + take - popped)
        wiring.connect(m, outq.o, wiring.flipped(self.o))

        # Clock 1: the beat, its aligned view, its length, the configuration.
        beat = self.i.payload
        vlan0 = (Cat(beat.data[13 * 8:14 * 8], beat.data[12 * 8:13 * 8]) == 0x8100)
        v = d.put("v", _reg(m, take, "v1", valid=True), 1)
        d.put("orig", _reg(m, beat.data, "orig1"), 1)
        d.put("keep", _reg(m, beat.keep, "keep1"), 1)
        d.put("user", _reg(m, beat.user, "user1"), 1)
        vlan = d.put("vlan", _reg(m, vlan0, "vlan1"), 1)
        al = _reg(m, Mux(vlan0, beat.data[32:], beat.data), "al1")   # al[j] = frame[j + 4*vlan]
        d.put("al", al, 1)
        length = d.put("len", _reg(m, keep_count(beat.keep), "len1"), 1)
        magic0 = Mux(self.codec, Mux(self.version == 3, SHIM_MAGIC_V3, SHIM_MAGIC_V2), SHIM_MAGIC)
        ok = d.put("ok", _reg(m, self.enable & k_in_range(self.k, self.codec, self.version),
                              "ok1"), 1)
        d.put("dscp", _reg(m, self.dscp, "dscp1"), 1)
        d.put("k", _reg(m, self.k, "k1"), 1)
        d.put("codec", _reg(m, self.codec, "codec1"), 1)
        d.put("v3", _reg(m, self.codec & (self.version == 3), "v3_1"), 1)
        d.put("vers2", _reg(m, self.codec & (self.version == 2), "vers2_1"), 1)
        d.put("magic", _reg(m, magic0, "magic1"), 1)

        b = _bytes(al)

        def be16(j):
            return Cat(b[j + 1], b[j])

        # The IP header's sum without its ToS, total length and checksum (bytes 1-3,
        # 10-11 of the header): the two forms add their own.
        m.submodules.ip_sum = ip_sum = Checksum()
        m.d.comb += [ip_sum.valid.eq(v), ip_sum.first.eq(1), ip_sum.last.eq(1),
                     ip_sum.data.eq(Cat(*b[14:34])),
                     ip_sum.mask.eq(0b1111_1111_0011_1111_0001)]
        d.put("ip_sum", ip_sum.sum, _IP_SUM + Checksum.LATENCY)

        # Clock 2: header tests.
        proto = b[23]
        tcp = proto == _IPPROTO_TCP
        udp = proto == _IPPROTO_UDP
        hdr_ok = (ok & ~d.at("user", 1) & (b[14] == 0x45) & (b[15][2:] == d.at("dscp", 1))
                  & (b[20][:6] == 0) & (b[21] == 0)
                  & (udp | (tcp & (b[46][4:] == 5))))
        d.put("hdr_ok", _reg(m, hdr_ok, "hdr_ok2"), 2)
        tcp2 = d.put("tcp", _reg(m, tcp, "tcp2"), 2)
        total = d.put("total", _reg(m, be16(16), "total2"), 2)
        d.put("ulen", _reg(m, be16(38), "ulen2"), 2)
        d.put("tos", _reg(m, b[15], "tos2"), 2)
        d.put("pay", _reg(m, Mux(tcp, Cat(*b[54:64], C(0, 14 * 8)), Cat(*b[42:64], C(0, 16))),
                          "pay2"), 2)
        # The frame's bytes behind the IP header's start (signed: a runt goes negative).
        d.put("room", _reg(m, Cat(length, C(0, 1)).as_signed() - Mux(vlan, 18, 14), "room2"), 2)

        # Clock 3: lengths. L = total - 28 (UDP) or - 40 (TCP), at most 22 when eligible.
        room = d.at("room", 2)
        fits = (room >= 0) & (total[7:] == 0) & (total[:7] <= room[:7])
        min_ok = Mux(tcp2, total >= 44, total >= 32)
        d.put("fits", _reg(m, fits & min_ok, "fits3"), 3)
        d.put("l4len", _reg(m, total - 20, "l4len3"), 3)
        pay_len = d.put("L", _reg(m, (total - Mux(tcp2, 40, 28))[:6], "L3"), 3)

        # Clock 4: eligible.
        l4len = d.at("l4len", 3)
        elig = (d.at("hdr_ok", 3) & d.at("fits", 3)
                & (d.at("tcp", 3) | (d.at("ulen", 3) == l4len)))
        d.put("elig", _reg(m, elig, "elig4"), 4)

        # Clock 3: the CompressionUnit takes the payload as one group.
        m.submodules.cu = cu = CompressionUnit()
        m.d.comb += [
            cu.k.eq(d.at("k", _CU_IN)), cu.v2.eq(d.at("codec", _CU_IN)),
            cu.i.valid.eq(d.at("v", _CU_IN)),
            cu.i.payload.values.eq(d.at("pay", _CU_IN)),
            cu.i.payload.count.eq(Mux(pay_len <= 23, pay_len[2:], 0)),
            cu.i.payload.tail.eq(Mux(pay_len <= 23, pay_len[:2], 0)),
            cu.i.payload.last.eq(1),
            cu.o.ready.eq(1),
        ]
        # The decoded payload D's sum (clock 5 -> 12).
        m.submodules.d_sum = d_sum = Checksum()
        m.d.comb += [d_sum.valid.eq(cu.d_valid), d_sum.first.eq(1), d_sum.last.eq(1),
                     d_sum.data.eq(cu.d_data), d_sum.mask.eq(cu.d_mask)]
        d.put("d_sum", d_sum.sum, _D_SUM + Checksum.LATENCY)

        # The pseudo header and the L4 header as the receiver restores them (original
        # lengths, checksum field 0), clock 3 -> 10: source and destination addresses,
        # 0, protocol, the L4 length, then the L4 header (UDP: 6 bytes before its
        # checksum; TCP: 16 bytes, its checksum masked, the urgent pointer).
        ah = _bytes(d.at("al", _HDR_SUM))
        tcp3 = d.at("tcp", _HDR_SUM)
        m.submodules.hdr_sum = hdr_sum = Checksum()
        m.d.comb += [
            hdr_sum.valid.eq(d.at("v", _HDR_SUM)), hdr_sum.first.eq(1), hdr_sum.last.eq(1),
            hdr_sum.data.eq(Cat(*ah[26:34], C(0, 8), _b8(Mux(tcp3, _IPPROTO_TCP, _IPPROTO_UDP)),
                                l4len[8:16], l4len[:8], *ah[34:54])),
            hdr_sum.mask.eq(Mux(tcp3, 0xCFFF_FFFF, 0x0003_FFFF)),
        ]
        d.put("hdr_sum", hdr_sum.sum, _HDR_SUM + Checksum.LATENCY)
        # The UDP checksum as it came: 0 (disabled) stays 0.
        d.put("ucs0", _reg(m, be16(40) == 0, "ucs0_2"), 2)

        # Clock 8: the group; clock 9: |C|.
        shim_len = Mux(d.at("v3", _GROUP), 8, 4)
        clen = d.put("clen", _reg(m, shim_len + cu.o.payload.length, "clen9"), _CLEN)
        d.put("group", _reg(m, cu.o.payload.data[:8 * (_BYTES - 46)], "group9"), _CLEN)

        # Clock 9: version 3's check word (-> 11); |C| < 64 and L < 23 here, so their
        # high bytes are 0.
        ac = _bytes(d.at("al", _CLEN))
        tcp9 = d.at("tcp", _CLEN)
        m.submodules.check = check = ShimCheck(fixed={11: 0, 20: 0, 22: 0, 24: SHIM_MAGIC_V3})
        seq = Mux(tcp9, Cat(*ac[38:42]), 0)
        m.d.comb += check.msg.eq(Cat(*ac[26:34], *ac[18:20], ac[23], C(0, 8), *ac[34:38], seq,
                                     C(0, 8), _b8(clen), C(0, 8), _b8(d.at("L", _CLEN)),
                                     C(SHIM_MAGIC_V3, 8), _b8(d.at("k", _CLEN))))
        d.put("word", check.word, _CLEN + ShimCheck.LATENCY)

        # Clock 10: compressible, the new lengths.
        L9 = d.at("L", _CLEN)
        d.put("comp", _reg(m, d.at("elig", _CLEN) & (clen < L9), "comp10"), 10)
        d.put("tot_new", _reg(m, clen + Mux(tcp9, 40, 28), "tot_new10"), 10)
        d.put("ulen_new", _reg(m, clen + 8, "ulen_new10"), 10)

        # Clocks 10-12: the IP header checksums of the two forms.
        ips = d.at("ip_sum", 10)
        tos10 = d.at("tos", 10)
        x_c = _reg(m, ips + tos10 + d.at("tot_new", 10), "ipx_c11")
        x_f = _reg(m, ips + tos10[:2] + d.at("total", 10), "ipx_f11")
        ipcs = {}
        for name, x in (("c", x_c), ("f", x_f)):
            f1 = _reg(m, x[:16] + x[16:], f"ipf_{name}12")
            ipcs[name] = d.put(f"ipcs_{name}", _reg(m, ~(f1[:16] + f1[16])[:16],
                                                    f"ipcs_{name}13"), 13)

        # Clocks 12-14: the L4 checksum over the original lengths and D.
        y = _reg(m, d.at("hdr_sum", 12) + d.at("d_sum", 12), "l4y13")
        f = _reg(m, (y[:16] + y[16])[:16], "l4f14")
        cs = ~f
        udp14 = ~d.at("tcp", 14)
        l4cs = Mux(udp14 & d.at("ucs0", 14), 0, Mux(udp14 & (cs == 0), 0xFFFF, cs))
        d.put("l4cs", _reg(m, l4cs, "l4cs15"), _OUT)

        # Clock 15: the output beat.
        o_data, o_keep = self._assemble(m, d)
        byp = ~d.at("elig", _OUT)
        comp = d.at("comp", _OUT)
        out = Signal(beat_layout(SHORT_BEAT_BITS))
        m.d.sync += [
            out.data.eq(o_data),
            out.keep.eq(Mux(comp, o_keep, d.at("keep", _OUT))),
            out.last.eq(1),
            out.user.eq(byp & d.at("user", _OUT)),
        ]
        v16 = _reg(m, d.at("v", _OUT), "v16", valid=True)
        m.d.comb += [outq.i.valid.eq(v16), outq.i.payload.eq(out)]

        # Counters, with the frame's beat into the FIFO (frames_in when it is taken,
        # frames_out when it leaves).
        kinds = {"byp": byp, "fb": ~byp & ~comp, "comp": comp,
                 "v1": comp & ~d.at("codec", _OUT), "v2": comp & d.at("vers2", _OUT),
                 "v3": comp & d.at("v3", _OUT)}
        kinds16 = {n: _reg(m, s, f"{n}16") for n, s in kinds.items()}
        bytes_in = _reg(m, d.at("L", _OUT), "bin16")
        bytes_out = _reg(m, d.at("clen", _OUT), "bout16")
        counts = {"bypassed": "byp", "fallback": "fb", "compressed": "comp",
                  "version1": "v1", "version2": "v2", "version3": "v3"}
        with m.If(take):
            m.d.sync += self.frames_in.eq(self.frames_in + 1)
        with m.If(popped):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)
        with m.If(v16):
            for port, kind in counts.items():
                with m.If(kinds16[kind]):
                    m.d.sync += getattr(self, port).eq(getattr(self, port) + 1)
            with m.If(kinds16["comp"]):
                m.d.sync += [self.payload_bytes_in.eq(self.payload_bytes_in + bytes_in),
                             self.payload_bytes_out.eq(self.payload_bytes_out + bytes_out)]
        return m

    def _assemble(self, m, d):
        """The output beat (data, keep of a compressed frame) at clock 15: for each byte,
        its source under the frame's layout (VLAN tag, TCP, version 3's 8-byte shim)
        picked from the three forms."""
        orig = _bytes(d.at("orig", _OUT))
        group = _bytes(d.at("group", _OUT))
        vlan, tcp, v3 = d.at("vlan", _OUT), d.at("tcp", _OUT), d.at("v3", _OUT)
        comp, elig = d.at("comp", _OUT), d.at("elig", _OUT)
        word, L, k = d.at("word", _OUT), d.at("L", _OUT), d.at("k", _OUT)
        magic = d.at("magic", _OUT)
        tot_new, ulen_new = d.at("tot_new", _OUT), d.at("ulen_new", _OUT)
        ipcs_c, ipcs_f, l4cs = d.at("ipcs_c", _OUT), d.at("ipcs_f", _OUT), d.at("l4cs", _OUT)
        tos = d.at("tos", _OUT)

        def hi(x):
            return x[8:16]

        def lo(x):
            return x[:8]

        def compressed_src(j, has_vlan, is_tcp, is_v3):
            l3 = 18 if has_vlan else 14
            l4 = l3 + 20
            p = l4 + (20 if is_tcp else 8)
            g0 = p + (8 if is_v3 else 4)
            patches = {l3 + 2: C(0, 8), l3 + 3: lo(tot_new), l3 + 10: hi(ipcs_c),
                       l3 + 11: lo(ipcs_c)}
            if is_tcp:
                patches.update({l4 + 16: hi(l4cs), l4 + 17: lo(l4cs)})
            else:
                patches.update({l4 + 4: C(0, 8), l4 + 5: lo(ulen_new), l4 + 6: hi(l4cs),
                                l4 + 7: lo(l4cs)})
            shim = [C(0, 8), _b8(L), magic, _b8(k)]
            if is_v3:
                shim += [word[24:32], word[16:24], word[8:16], word[:8]]
            if j < p:
                return patches.get(j, orig[j])
            if j < g0:
                return shim[j - p]
            return group[j - g0] if j - g0 < len(group) else C(0, 8)

        def fallback_src(j, has_vlan):
            l3 = 18 if has_vlan else 14
            return {l3 + 1: Cat(tos[:2], C(0, 6)), l3 + 10: hi(ipcs_f),
                    l3 + 11: lo(ipcs_f)}.get(j, orig[j])

        out = []
        sel = Cat(v3, tcp, vlan)
        for j in range(_BYTES):
            c = Array(compressed_src(j, bool(s & 4), bool(s & 2), bool(s & 1))
                      for s in range(8))[sel]
            fb = Mux(vlan, fallback_src(j, True), fallback_src(j, False))
            out.append(Mux(~elig, orig[j], Mux(comp, c, fb)))
        # keep of a compressed frame: its length, the payload's start plus |C|.
        n = d.at("clen", _OUT) + Mux(tcp, 54, 42) + Mux(vlan, 4, 0)
        keep = Cat(*(n > j for j in range(_BYTES)))
        return Cat(*out), keep
