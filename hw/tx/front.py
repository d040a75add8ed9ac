"""TX payload front: a frame's beats to the realigner and past the header checksums."""

import operator
from functools import reduce

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import AxisBeat, axis_signature
from ..checksum import Checksum
from ..primitives import keep_count
from ..realigner import Realigner, realigner_cfg
from ..wire import BEAT_BITS, BEAT_BYTES, MAX_FRAME_BEATS
from .layouts import CheckFields, FrameMode, HdrSums, front_result

__all__ = ["Front"]


class Front(wiring.Component):
    """Takes each frame's beats (``beats``, the ingress FIFO) under its ``mode`` (from the
    dispatcher, loaded as the previous frame ends, so frames follow without a bubble):
    compressible frames' beats go to the Realigner (``rl_cfg``: its per-frame skip and
    length, from the dispatcher), whose payload beats leave on ``o``; every beat goes
    past the header checksums (IP header rest, L4 header: per-word masks of byte ranges,
    then two Checksum pipelines), whose sums leave on ``hsum``. At the frame's end its
    summary (lengths, where it sits in the orig ring, drop / user flags) goes to
    ``result``. The header bytes version 3's check word covers (addresses, IP ID, ports,
    sequence number) are picked from the beats as they pass and leave on ``ck``, one
    entry per frame, a clock after its last beat. ``f_ptr`` mirrors the ingress's orig-ring write pointer (same beats in the
    same order, the same MAX_FRAME_BEATS cap).

    ``hsum`` and ``ck`` are written without checking their ``ready`` (``valid`` is a write
    strobe): their FIFOs (16) cannot overflow while ``result``'s FIFO (8) gates this stage and the
    checksum pipelines hold fewer than 8 more frames. ``beats.ready`` and
    ``mode.ready`` depend on ``beats.valid``, ``result.ready`` and the realigner's
    ``i.ready`` in the same clock.
    """

    def __init__(self, aw):
        self.aw = aw
        super().__init__({
            "beats": In(stream.Signature(AxisBeat)),
            "mode": In(stream.Signature(FrameMode)),
            "rl_cfg": In(stream.Signature(realigner_cfg())),
            "o": Out(axis_signature()),
            "result": Out(stream.Signature(front_result(aw))),
            "hsum": Out(stream.Signature(HdrSums)),
            "ck": Out(stream.Signature(CheckFields)),
        })

    def elaborate(self, platform):
        m = Module()
        B = BEAT_BITS
        m.submodules.realigner = rl = Realigner()
        # A frame the engine sends has at most MAX_FRAME_BEATS beats (longer ones are
        # dropped, their sums unused), which keeps the checksums' accumulators narrow.
        m.submodules.ck_ip = ck_ip = Checksum(max_beats=MAX_FRAME_BEATS)
        m.submodules.ck_l4 = ck_l4 = Checksum(max_beats=MAX_FRAME_BEATS)
        wiring.connect(m, wiring.flipped(self.rl_cfg), rl.cfg)
        wiring.connect(m, rl.o, wiring.flipped(self.o))
        f_active = Signal()
        f_mode = Signal(FrameMode)
        f_q = Signal(range(MAX_FRAME_BEATS + 2))
        f_bytes = Signal(17)
        f_ptr = Signal(self.aw + 1)          # mirrors the ingress write pointer
        f_start = Signal.like(f_ptr)
        head = Signal(AxisBeat)
        m.d.comb += head.eq(self.beats.payload)
        f_pop = Signal()
        f_end = Signal()
        to_rl = Signal()
        m.d.comb += to_rl.eq(f_mode.compress)
        can_pop = Signal()
        m.d.comb += [
            can_pop.eq(f_active & self.beats.valid & (~head.last | self.result.ready) &
                       (~to_rl | rl.i.ready)),
            f_pop.eq(can_pop),
            f_end.eq(f_pop & head.last),
            self.beats.ready.eq(f_pop),
            rl.i.valid.eq(f_active & self.beats.valid & to_rl & (~head.last | self.result.ready)),
            rl.i.payload.eq(head),
        ]
        f_load = Signal()
        m.d.comb += [f_load.eq(self.mode.valid & (~f_active | f_end)), self.mode.ready.eq(f_load)]
        with m.If(f_end):
            m.d.sync += f_active.eq(0)
        with m.If(f_load):
            m.d.sync += [f_active.eq(1), f_mode.eq(self.mode.payload), f_q.eq(0), f_bytes.eq(0),
                         f_start.eq(Mux(f_pop, f_ptr + Mux(f_q < MAX_FRAME_BEATS, 1, 0), f_ptr))]
        nb_head = Signal(6)
        m.d.comb += nb_head.eq(keep_count(head.keep))
        with m.If(f_pop):
            with m.If(f_q < MAX_FRAME_BEATS):
                m.d.sync += f_ptr.eq(f_ptr + 1)
            with m.If(~head.last):
                m.d.sync += [f_q.eq(Mux(f_q <= MAX_FRAME_BEATS, f_q + 1, f_q)),
                             f_bytes.eq(f_bytes + BEAT_BYTES)]
        stored = Signal(9)
        m.d.comb += stored.eq(Mux(f_q < MAX_FRAME_BEATS, f_q + 1, MAX_FRAME_BEATS))
        front_w = Signal(front_result(self.aw))
        m.d.comb += [
            front_w.info.eq(f_mode.info), front_w.compress.eq(f_mode.compress),
            front_w.v2.eq(f_mode.v2), front_w.v3.eq(f_mode.v3), front_w.k.eq(f_mode.k),
            front_w.frame_len.eq(f_bytes + nb_head), front_w.stored.eq(stored),
            front_w.orig_start.eq(f_start), front_w.user.eq(head.user),
            front_w.drop.eq(f_q >= MAX_FRAME_BEATS),
            self.result.valid.eq(f_end), self.result.payload.eq(front_w),
        ]

        # Header checksums: per-word masks, then the two Checksum pipelines (their
        # results pair up in hsumq, one per frame). Each byte range [lo, hi) is kept
        # relative to the current beat, so no adders or compares sit between the beat
        # counter and the mask register.
        mode_h = Signal(FrameMode)
        m.d.comb += mode_h.eq(self.mode.payload)
        ni, nb = mode_h.info, mode_h.bounds
        bounds = {"ip4": nb.ip4, "ip10": nb.ip10, "ip12": nb.ip12, "ip20": nb.ip20,
                  "l4": ni.l4, "l4c": nb.l4c, "l4c2": nb.l4c2, "p": ni.payload_offset}
        ranges = {            # name: (lo, hi) for the frame being loaded
            "ipa": ("ip4", "ip10"),       # IP header words 2..4
            "ipb": ("ip12", "l4"),        # addresses and options
            "adr": ("ip12", "ip20"),      # pseudo-header addresses
            "l4a": ("l4", "l4c"),         # L4 header before its checksum
            "l4b": ("l4c2", "p"),         # L4 header after its checksum
        }
        # Every bound is even (l3 and l4 are, and so are the field offsets), so the masks
        # are per 16-bit word. Each bound is split into its word (fixed per frame, kept as
        # a thermometer "words >= bound") and its beat, which is tracked as flags "this
        # beat" / "a past beat", so a word's mask bit is one LUT of flip-flops.
        words = BEAT_BYTES // 2

        def bound(name, v0):
            ge = Signal(words, name=f"{name}_ge")   # word w >= the bound's word
            cnt = Signal(4, name=f"{name}_cnt")     # beats from the current one
            now = Signal(name=f"{name}_now")
            past = Signal(name=f"{name}_past")
            with m.If(f_load):
                m.d.sync += [ge.eq(Cat(*(v0[1:5] <= w for w in range(words)))),
                             cnt.eq(v0[5:9]), now.eq(v0[5:9] == 0), past.eq(0)]
            with m.Elif(f_pop):
                m.d.sync += [cnt.eq(cnt - 1), past.eq(past | now),
                             now.eq(~past & ~now & (cnt == 1))]
            return ge, now, past

        bnd = {}
        for name, v in bounds.items():
            v0 = Signal(9, name=f"bnd_{name}_v")
            m.d.comb += v0.eq(v)
            bnd[name] = bound(f"bnd_{name}", v0)
        masks = {}
        for name, (lo_name, hi_name) in ranges.items():
            lo_ge, lo_now, lo_past = bnd[lo_name]
            hi_ge, hi_now, hi_past = bnd[hi_name]
            mk = Signal(words, name=f"rng_{name}_mask")
            for w in range(words):
                m.d.comb += mk[w].eq((lo_past | (lo_now & lo_ge[w])) &
                                     ((~hi_past & ~hi_now) | (hi_now & ~hi_ge[w])))
            masks[name] = mk
        ck_v, ck_first, ck_last = Signal(), Signal(), Signal()
        ck_data = Signal(B)
        ck_mip, ck_ml4 = Signal(words), Signal(words)
        m.d.sync += [
            ck_v.eq(f_pop), ck_first.eq(f_q == 0), ck_last.eq(head.last),
            ck_data.eq(head.data), ck_mip.eq(masks["ipa"] | masks["ipb"]),
            ck_ml4.eq(masks["adr"] | masks["l4a"] | masks["l4b"]),
        ]
        for ck, wmask in ((ck_ip, ck_mip), (ck_l4, ck_ml4)):
            mask = Cat(*(b.replicate(2) for b in wmask))
            m.d.comb += [ck.valid.eq(ck_v), ck.first.eq(ck_first), ck.last.eq(ck_last),
                         ck.data.eq(ck_data), ck.mask.eq(mask)]
        # hsumq never overflows: frontq (8) gates the front stage and the checksum
        # pipelines hold fewer than 8 more frames. Both sums are fed the same beats, so
        # their ``done`` rise together; both are read so that neither is a dead register.
        m.d.comb += [self.hsum.valid.eq(ck_ip.done & ck_l4.done), self.hsum.payload.eq(Cat(ck_ip.sum, ck_l4.sum))]

        # Version 3's check fields, picked from the registered beats (ck_data), with the
        # offsets registered beside them (f_mode moves on at a frame's end). Every field
        # lies in beats 0..2: l3 is 14 or 18, l4 = l3 + 4 IHL in 34..78. The beat and the
        # L4 offset are registered one-hot, and each byte's candidates (mutually
        # exclusive: one base holds per frame) meet in an AND-OR, not a priority chain:
        # 3 LUT levels from the registers to a field byte.
        l4_offsets = range(34, 79, 4)
        ck_beat = Signal(3)         # one-hot: beat 0, 1 or 2 (none past 2)
        ck_vlan = Signal()
        ck_l4 = Signal(len(l4_offsets))
        m.d.sync += [ck_beat.eq(Cat(f_q == 0, f_q == 1, f_q == 2)),
                     ck_vlan.eq(f_mode.info.vlan),
                     ck_l4.eq(Cat(*(f_mode.info.l4 == v for v in l4_offsets)))]
        fields = Signal(CheckFields)
        fb = [fields.as_value()[8 * i:8 * i + 8] for i in range(18)]
        # (message bytes, choices of the base: (condition, base offset), offset from it)
        picks = []
        l3s = [(~ck_vlan, 14), (ck_vlan, 18)]
        l4s = [(ck_l4[j], v) for j, v in enumerate(l4_offsets)]
        for i in range(8):
            picks.append((fb[i], l3s, 12 + i))          # source, destination
        for i in range(2):
            picks.append((fb[8 + i], l3s, 4 + i))       # IP identification
        for i in range(8):
            picks.append((fb[10 + i], l4s, i))          # ports, sequence number
        for n, (dst, bases, c) in enumerate(picks):
            hits, vals = [], []
            for cond, base in bases:
                off = base + c
                hit = Signal(name=f"ck_hit_{n}_{off}")
                m.d.comb += hit.eq(ck_v & cond & ck_beat[off // BEAT_BYTES])
                lane = off % BEAT_BYTES
                hits.append(hit)
                vals.append(ck_data[8 * lane:8 * lane + 8] & hit.replicate(8))
            any_hit, val = Signal(name=f"ck_any_{n}"), Signal(8, name=f"ck_val_{n}")
            m.d.comb += [any_hit.eq(Cat(*hits).any()), val.eq(reduce(operator.or_, vals))]
            with m.If(any_hit):
                m.d.sync += dst.eq(val)
        ck_push = Signal()
        m.d.sync += ck_push.eq(ck_v & ck_last)
        m.d.comb += [self.ck.valid.eq(ck_push), self.ck.payload.eq(fields)]
        return m
