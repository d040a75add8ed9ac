"""CompressionEngine (TX, paper Sec. VI-A, Fig. 9): compresses eligible frames in flight.

Store-and-forward, one 32-byte beat per clock in and out. Data flow:

    s ─► ingress ─┬─► orig FrameStore (ring, every frame as received)
                  ├─► PacketMatcher (sniffs the first beats) ─► info FIFO ─► dispatcher
                  └─► beat FIFO ─► front: ┬─► header checksums (IP rest, L4 header)
                                          └─► Realigner (skip P, length L)
          ─► GroupFormer (8 values + count per group, tail bytes aside)
          ─► CompressionUnit ─► feeder: [P mod 32 placeholders + shim] groups [tail]
             (the tail rides in the last group, unless the payload's last beat holds
             only tail bytes)
          ─► AlignmentUnit (beats already on the output frame's byte lanes)
          ─► comp FrameStore (ring)
    finisher: per frame, in order: decision (bypass / fall-back / compressed / drop),
              HeaderRewrite patches ─► descriptor FIFO
    egress: reads header beats from the orig store and payload beats from the comp store,
            merges them at byte P, applies the header patches ─► output FIFO ─► o

The compressed payload is frame-aligned for free: the AlignmentUnit is first fed
(P mod 32) placeholder bytes and the 4-byte shim (one fill vector: the shim word,
pre-rotated, repeated), so its beats land on the lanes they take in the output frame;
the one beat holding byte P is a per-lane merge. The D checksum is summed from the
CompressionUnit's decoded side port (a tail riding in a group included).

Rates: compression runs while the frame streams in, so the store only has to hold a
frame until its turn on the wire; both rings hold 1024 beats (>= 3 maximum frames), so
back-to-back frames keep the input at one beat per clock (compressible payloads). The
compression path carries 32 bytes per clock into the AlignmentUnit, so payloads that
grow (all 32-bit values) throttle the input slightly (fall-back frames).

Register slices (4-entry FIFOs in distributed RAM) sit between the realigner and the
group former, the CompressionUnit and the feeder, the feeder and the AlignmentUnit, so
no ready signal ripples through more than one block (the CompressionUnit registers its
own input).
Latency from a frame's last input beat to its first output beat: about 50 clocks.

Configuration ``enable``, ``dscp``, ``k`` is sampled on each frame's first beat.
Frames longer than MAX_FRAME_BYTES are dropped and counted; a frame with ``tuser`` set,
or with the engine disabled or k outside 1..126, is forwarded unchanged.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .alignment_unit import AlignmentUnit, ByteVector
from .axis import AxisBeat, axis_signature
from .checksum import Checksum
from .primitives import FifoSlice, add_fifo, keep_count, switch_pick
from .compression_unit import CompressionUnit
from .frame_store import FrameStore
from .header_rewrite import PATCHES, HeaderRewrite, Patch
from .packet_matcher import MatchInfo, PacketMatcher
from .realigner import Realigner
from .wire import (BEAT_BITS, BEAT_BYTES, DEFAULT_DSCP, K_DEFAULT, K_MAX, K_MIN, MAX_FRAME_BEATS,
                   SHIM_MAGIC)

__all__ = ["CompressionEngine"]


# ok: enabled and k in range, decided at the ingress so the dispatcher reads one bit.
FrameCfg = data.StructLayout({"ok": 1, "k": 7})

# What the front stage knows of a frame when it starts it.
# The header checksums' byte-range bounds that are not MatchInfo fields already are
# summed by the dispatcher, so that no adder sits in front of the front stage's masks.
HdrBounds = data.StructLayout({n: 8 for n in ("ip4", "ip10", "ip12", "ip20", "l4c", "l4c2")})
FrameMode = data.StructLayout({
    "info": MatchInfo,
    "compress": 1,        # header parsed, engine enabled, k valid: run the compressor
    "k": 7,
    "bounds": HdrBounds,
})

# What the finisher learns from the front stage at the frame's end.
FrontResult = data.StructLayout({
    "info": MatchInfo,
    "compress": 1,
    "frame_len": 17,
    "stored": 9,          # beats written to the orig store (<= 288)
    "orig_start": 11,
    "user": 1,
    "drop": 1,
})

Desc = data.StructLayout({
    "mode": 2,            # 0: drop, 1: pass (bypass / fall-back), 2: compressed
    "user": 1,
    "orig_start": 11,
    "orig_next": 11,
    "has_comp": 1,
    "comp_start": 11,
    "comp_next": 11,
    "nbeats": 9,          # output beats
    "last_bytes": 6,      # valid bytes of the last output beat, 1..32
    "pb": 3,              # compressed: beat holding byte P
    "plane": 5,           # compressed: P mod 32
    "patches": data.ArrayLayout(Patch, PATCHES),
})

MODE_DROP, MODE_PASS, MODE_COMP = 0, 1, 2

# feeder: prefix and shim. The shim is kept rotated by plane mod 4, so that the prefix
# vector (placeholder bytes below the plane are never sent) is that word repeated: an
# AlignmentUnit fill vector.
ShimInfo = data.StructLayout({"plane": 5, "shim_rot": 32})
# The r = L mod 4 raw bytes; sep: they follow the last group as a vector of their own
# (a final beat of fewer than 4 bytes), else they ride in the last group (CompressionUnit)
# and ``tail`` is not used (the group carries them).
TailInfo = data.StructLayout({"tail": 24, "r": 2, "sep": 1})
# A CompressionUnit group as the feeder needs it (the decoded payload for the D checksum
# leaves the CompressionUnit on its side port).
FedGroup = data.StructLayout({"data": 272, "length": 6, "last": 1})
# Per compressed frame, feeder -> finisher: |C| and the 16-bit word sum of the tail bytes
# (the D checksum's last part, added to the groups' sum by the finisher).
CLenInfo = data.StructLayout({"clen": 17, "tsum": 17})


class CompressionEngine(wiring.Component):
    """TX engine. Ports: ``i``/``o`` AXI streams (``AxisBeat``), config ``enable``,
    ``dscp``, ``k``; counters (frames: 32 bits, bytes: 48 bits)."""

    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=DEFAULT_DSCP)
    k: In(7, init=K_DEFAULT)
    frames_in: Out(32)
    frames_out: Out(32)
    compressed: Out(32)
    bypassed: Out(32)
    fallback: Out(32)
    dropped: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def __init__(self, store_depth=1024):
        self.store_depth = store_depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        B = BEAT_BITS

        m.submodules.orig = orig = FrameStore(self.store_depth)
        m.submodules.comp = comp = FrameStore(self.store_depth)
        m.submodules.matcher = pm = PacketMatcher()
        m.submodules.realigner = rl = Realigner()
        m.submodules.cu = cu = CompressionUnit()
        # Register slices cut the ready chain comp writer -> AlignmentUnit -> feeder ->
        # CompressionUnit -> group former -> realigner -> front into short paths. The
        # CompressionUnit needs none in front: it registers its input, and its i.ready is
        # two gates behind the slice after it.
        m.submodules.rs_rl = rs_rl = FifoSlice(AxisBeat)
        m.submodules.rs_gout = rs_gout = FifoSlice(FedGroup)
        m.submodules.rs_vec = rs_vec = FifoSlice(ByteVector)
        # The egress zeroes bytes past keep, so the AlignmentUnit need not clear them.
        m.submodules.au = au = AlignmentUnit(clear_stale=False)
        # A frame the engine sends has at most MAX_FRAME_BEATS beats (longer ones are
        # dropped, their sums unused), which keeps the checksums' accumulators narrow.
        m.submodules.ck_ip = ck_ip = Checksum(max_beats=MAX_FRAME_BEATS)
        m.submodules.ck_l4 = ck_l4 = Checksum(max_beats=MAX_FRAME_BEATS)
        m.submodules.ck_d = ck_d = Checksum(max_beats=MAX_FRAME_BEATS)
        m.submodules.rewrite = hr = HeaderRewrite()

        beatq = add_fifo(m, "beatq", AxisBeat, 16)
        # Fast FIFOs where the dispatcher's decision drives r_en. infoq is written without
        # a w_rdy check (see below); 32 entries (the same LUTRAM as 16) cover the one
        # entry its early w_rdy keeps spare.
        infoq = add_fifo(m, "infoq", MatchInfo, 32, fast=True)
        # cfgq likewise (fast: the dispatcher's decision drives its r_en): a frame's entry
        # is written with its first beat, and a frame is not popped from beatq before it
        # is dispatched, so cfgq holds at most 16 entries.
        cfgq = add_fifo(m, "cfgq", FrameCfg, 32, fast=True)
        modeq = add_fifo(m, "modeq", FrameMode, 4, fast=True)
        kq = add_fifo(m, "kq", 7, 4, fast=True)
        shimq = add_fifo(m, "shimq", ShimInfo, 4, fast=True)
        tailq = add_fifo(m, "tailq", TailInfo, 4, fast=True)
        frontq = add_fifo(m, "frontq", FrontResult, 8)
        hsumq = add_fifo(m, "hsumq", 32, 16)
        clenq = add_fifo(m, "clenq", CLenInfo, 8)
        dsumq = add_fifo(m, "dsumq", 16, 16)
        compq = add_fifo(m, "compq", 22, 8)
        descq = add_fifo(m, "descq", Desc, 4)
        outq = add_fifo(m, "outq", AxisBeat, 8)

        # ------------------------------------------------------------------ ingress
        # Accepts a beat when the beat FIFO has room and the orig ring has a free entry
        # (beats past MAX_FRAME_BEATS are not stored: the frame will be dropped).
        in_q = Signal(range(MAX_FRAME_BEATS + 2))    # beat index in frame, saturating
        # in_q < MAX_FRAME_BEATS and in_q == 0 kept as flags: they sit on the ready path.
        in_store = Signal(init=1)
        in_first = Signal(init=1)
        m.d.comb += self.i.ready.eq(beatq.w_rdy & (orig.w_room | ~in_store))
        in_fire = Signal()
        m.d.comb += in_fire.eq(self.i.valid & self.i.ready)
        m.d.comb += [
            beatq.w_en.eq(in_fire), beatq.w_data.eq(self.i.payload),
            orig.w_en.eq(in_fire & in_store), orig.w_data.eq(self.i.payload.data),
        ]
        with m.If(in_fire):
            with m.If(self.i.payload.last):
                m.d.sync += [in_q.eq(0), in_store.eq(1), in_first.eq(1),
                             self.frames_in.eq(self.frames_in + 1)]
            with m.Else():
                m.d.sync += in_first.eq(0)
                with m.If(in_q <= MAX_FRAME_BEATS):
                    m.d.sync += [in_q.eq(in_q + 1), in_store.eq(in_q + 1 < MAX_FRAME_BEATS)]
        # enable / k are sampled at the first beat; the matcher samples dscp itself.
        m.d.comb += [
            cfgq.w_en.eq(in_fire & in_first),
            cfgq.w_data.eq(Cat(self.enable & (self.k >= K_MIN) & (self.k <= K_MAX), self.k)),
            pm.beat.eq(self.i.payload), pm.valid.eq(in_fire), pm.dscp.eq(self.dscp),
            # infoq never overflows: every info waiting there belongs to a frame whose
            # beats are all still in beatq, which holds 16 beats.
            infoq.w_en.eq(pm.done), infoq.w_data.eq(pm.info),
        ]

        # --------------------------------------------------------------- dispatcher
        # Pairs a frame's match info with its config, decides whether to compress it,
        # and hands the per-frame parameters to the realigner, the group former and the
        # feeder ahead of time, so that consecutive frames follow without a bubble.
        info_h = Signal(MatchInfo)
        cfg_h = Signal(FrameCfg)
        m.d.comb += [info_h.eq(infoq.r_data), cfg_h.eq(cfgq.r_data)]
        want = Signal()
        m.d.comb += want.eq(info_h.header_ok & cfg_h.ok)
        disp = Signal()
        mode_w = Signal(FrameMode)
        shim_w = Signal(ShimInfo)
        m.d.comb += disp.eq(infoq.r_rdy & cfgq.r_rdy & modeq.w_rdy &
                            (~want | (rl.cfg.ready & kq.w_rdy & shimq.w_rdy)))
        m.d.comb += [
            infoq.r_en.eq(disp), cfgq.r_en.eq(disp),
            modeq.w_en.eq(disp), mode_w.info.eq(info_h), mode_w.compress.eq(want),
            mode_w.k.eq(cfg_h.k), modeq.w_data.eq(mode_w),
            mode_w.bounds.ip4.eq(info_h.l3 + 4), mode_w.bounds.ip10.eq(info_h.l3 + 10),
            mode_w.bounds.ip12.eq(info_h.l3 + 12), mode_w.bounds.ip20.eq(info_h.l3 + 20),
            # the L4 checksum field: UDP l4 + 6, TCP l4 + 16
            mode_w.bounds.l4c.eq(info_h.l4 + Mux(info_h.udp, 6, 16)),
            mode_w.bounds.l4c2.eq(info_h.l4 + Mux(info_h.udp, 8, 18)),
            rl.cfg.valid.eq(disp & want),
            rl.cfg.payload.skip.eq(info_h.payload_offset),
            rl.cfg.payload.insert.eq(0),
            rl.cfg.payload.length.eq(info_h.payload_len),
            kq.w_en.eq(disp & want), kq.w_data.eq(cfg_h.k),
            shimq.w_en.eq(disp & want),
            shim_w.plane.eq(info_h.payload_offset[:5]), shimq.w_data.eq(shim_w),
        ]
        shim_bytes = Signal(32)
        m.d.comb += shim_bytes.eq(Cat(info_h.payload_len[8:16], info_h.payload_len[:8],
                                      C(SHIM_MAGIC, 8), cfg_h.k, C(0, 1)))
        with m.Switch(info_h.payload_offset[:2]):
            for c in range(4):
                with m.Case(c):
                    m.d.comb += shim_w.shim_rot.eq(
                        Cat(shim_bytes[32 - 8 * c:], shim_bytes[:32 - 8 * c]) if c else shim_bytes)

        # -------------------------------------------------------------------- front
        # Takes the frame's beats from beatq: compressible frames go to the realigner,
        # every beat goes past the header checksums; at the frame's end its summary goes
        # to the finisher.
        f_active = Signal()
        f_mode = Signal(FrameMode)
        f_q = Signal(range(MAX_FRAME_BEATS + 2))
        f_bytes = Signal(17)
        f_ptr = Signal(orig.wp.shape())          # mirrors the ingress write pointer
        f_start = Signal.like(f_ptr)
        head = Signal(AxisBeat)
        m.d.comb += head.eq(beatq.r_data)
        f_pop = Signal()
        f_end = Signal()
        to_rl = Signal()
        m.d.comb += to_rl.eq(f_mode.compress)
        can_pop = Signal()
        m.d.comb += [
            can_pop.eq(f_active & beatq.r_rdy & (~head.last | frontq.w_rdy) &
                       (~to_rl | rl.i.ready)),
            f_pop.eq(can_pop),
            f_end.eq(f_pop & head.last),
            beatq.r_en.eq(f_pop),
            rl.i.valid.eq(f_active & beatq.r_rdy & to_rl & (~head.last | frontq.w_rdy)),
            rl.i.payload.eq(head),
        ]
        f_load = Signal()
        m.d.comb += [f_load.eq(modeq.r_rdy & (~f_active | f_end)), modeq.r_en.eq(f_load)]
        with m.If(f_end):
            m.d.sync += f_active.eq(0)
        with m.If(f_load):
            m.d.sync += [f_active.eq(1), f_mode.eq(modeq.r_data), f_q.eq(0), f_bytes.eq(0),
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
        front_w = Signal(FrontResult)
        m.d.comb += [
            front_w.info.eq(f_mode.info), front_w.compress.eq(f_mode.compress),
            front_w.frame_len.eq(f_bytes + nb_head), front_w.stored.eq(stored),
            front_w.orig_start.eq(f_start), front_w.user.eq(head.user),
            front_w.drop.eq(f_q >= MAX_FRAME_BEATS),
            frontq.w_en.eq(f_end), frontq.w_data.eq(front_w),
        ]

        # Header checksums: per-word masks, then the two Checksum pipelines (their
        # results pair up in hsumq, one per frame). Each byte range [lo, hi) is kept
        # relative to the current beat, so no adders or compares sit between the beat
        # counter and the mask register.
        mode_h = Signal(FrameMode)
        m.d.comb += mode_h.eq(modeq.r_data)
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
        # pipelines hold fewer than 8 more frames.
        m.d.comb += [hsumq.w_en.eq(ck_ip.done), hsumq.w_data.eq(Cat(ck_ip.sum, ck_l4.sum))]

        # ------------------------------------------------------------ group former
        # Realigned payload beats -> CompressionUnit groups. One beat is held back so that
        # a final beat with only tail bytes (< 4) marks the previous group as the last.
        wiring.connect(m, rl.o, rs_rl.i)
        gi = rs_rl.o
        g_valid = Signal()
        g_data = Signal(B)
        g_nb = Signal(6)
        g_last = Signal()
        rl_nb = Signal(6)
        m.d.comb += rl_nb.eq(keep_count(gi.payload.keep))
        absorb = Signal()
        # keep is a contiguous low mask: fewer than 4 bytes <=> lane 3 is empty.
        m.d.comb += absorb.eq(~g_last & gi.valid & gi.payload.last & ~gi.payload.keep[3])
        grp_last = Signal()
        m.d.comb += grp_last.eq(g_last | absorb)
        g_out = Signal()
        m.d.comb += g_out.eq(g_valid & (g_last | gi.valid) & kq.r_rdy &
                             (~grp_last | tailq.w_rdy))
        g_fire = Signal()
        m.d.comb += g_fire.eq(g_out & cu.i.ready)
        count = Signal(4)
        tail_w = Signal(TailInfo)
        m.d.comb += count.eq(Mux(g_last, Mux(g_nb < 4, 1, g_nb[2:6]), 8))
        m.d.comb += [
            cu.i.valid.eq(g_out),
            cu.i.payload.values.eq(g_data),
            cu.i.payload.count.eq(count),
            cu.i.payload.last.eq(grp_last),
            # A held last beat's tail sits in value slot `count` (count < 8 when r > 0).
            cu.i.payload.tail.eq(Mux(g_last, g_nb[:2], 0)),
            # k travels with each group: the CompressionUnit samples it per group.
            cu.k.eq(kq.r_data),
            kq.r_en.eq(g_fire & grp_last),
            tailq.w_en.eq(g_fire & grp_last),
            # Only a separate tail (an absorbed beat) needs its bytes here: a held last
            # beat's tail rides in its group.
            tail_w.tail.eq(gi.payload.data[:24]),
            tail_w.r.eq(Mux(absorb, rl_nb[:2], g_nb[:2])),
            tail_w.sep.eq(absorb & (rl_nb[:2] != 0)),
            tailq.w_data.eq(tail_w),
            gi.ready.eq(~g_valid | g_fire),
        ]
        with m.If(g_fire & absorb):
            m.d.sync += g_valid.eq(0)
        with m.Elif(gi.ready):
            m.d.sync += [g_valid.eq(gi.valid), g_data.eq(gi.payload.data), g_nb.eq(rl_nb),
                         g_last.eq(gi.payload.last)]

        # ------------------------------------------------------------------ feeder
        # AlignmentUnit input: [P mod 32 placeholders + shim], the groups, and the tail
        # (inside the last group when the group former could put it there).
        a_in = rs_vec.i
        wiring.connect(m, rs_vec.o, au.i)
        m.d.comb += [
            rs_gout.i.valid.eq(cu.o.valid), cu.o.ready.eq(rs_gout.i.ready),
            rs_gout.i.payload.data.eq(cu.o.payload.data),
            rs_gout.i.payload.length.eq(cu.o.payload.length),
            rs_gout.i.payload.last.eq(cu.o.payload.last),
        ]
        # D checksum over the CompressionUnit's decoded groups (its side port, in frame
        # order like everything else; a tail riding in a group included); a separate
        # tail's bytes come in the finisher. The port's byte mask does the decode's
        # clearing in the Checksum's input flip-flops.
        m.d.comb += [
            ck_d.valid.eq(cu.d_valid), ck_d.first.eq(cu.d_first), ck_d.last.eq(cu.d_last),
            ck_d.data.eq(cu.d_data), ck_d.mask.eq(cu.d_mask),
            dsumq.w_en.eq(ck_d.done), dsumq.w_data.eq(ck_d.sum),
        ]
        go = rs_gout.o
        fd_groups = Signal()        # 0: the prefix is next; 1: the frame's groups
        fd_tail = Signal()          # the tail is owed as a vector of its own
        c_len = Signal(17)
        shim_h = Signal(shimq.r_data.shape())
        m.d.comb += shim_h.eq(shimq.r_data)
        sh = data.View(ShimInfo, shim_h)
        # The prefix is a fill vector of shim_rot: byte b holds shim byte (b - plane) mod 4,
        # so bytes plane..plane+3 are the shim.
        is_prefix = Signal()
        m.d.comb += is_prefix.eq(~fd_groups & ~fd_tail)
        tail_h = data.View(TailInfo, tailq.r_data)
        g = go.payload
        fd_fire = Signal()
        clen_add = Signal(7)
        with m.If(fd_tail):
            m.d.comb += [
                a_in.valid.eq(tailq.r_rdy & clenq.w_rdy),
                a_in.payload.length.eq(tail_h.r),
                a_in.payload.last.eq(1),
                fd_fire.eq(a_in.valid & a_in.ready),
                clen_add.eq(tail_h.r),
            ]
        with m.Elif(~fd_groups):
            m.d.comb += [
                a_in.valid.eq(shimq.r_rdy),
                a_in.payload.length.eq(sh.plane + 4),
                a_in.payload.last.eq(0),
                fd_fire.eq(a_in.valid & a_in.ready),
            ]
        with m.Else():
            # A last group waits for its tail entry (written by the group former when the
            # group entered the CompressionUnit, so it is there by now).
            end_here = Signal()
            g_ok = Signal()
            m.d.comb += [
                end_here.eq(g.last & ~tail_h.sep),
                g_ok.eq(~g.last | (tailq.r_rdy & (tail_h.sep | clenq.w_rdy))),
                a_in.valid.eq(go.valid & g_ok),
                a_in.payload.length.eq(g.length),
                a_in.payload.last.eq(end_here),
                fd_fire.eq(a_in.valid & a_in.ready),
                go.ready.eq(a_in.ready & g_ok),
                clen_add.eq(g.length),
            ]
        # The AlignmentUnit ignores bytes past a vector's length (and a fill vector's past
        # 4), so the data needs no zeros: only bytes 0..3 have more than one source.
        m.d.comb += [
            a_in.payload.fill.eq(is_prefix),
            a_in.payload.data.eq(Cat(
                Mux(is_prefix, sh.shim_rot,
                    Mux(fd_tail, Cat(tail_h.tail, g.data[24:32]), g.data[:32])),
                g.data[32:])),
        ]
        ends_frame = Signal()
        m.d.comb += ends_frame.eq(fd_fire & a_in.payload.last)

        # c_len sums the shim, the groups (tails inside included) and a separate tail;
        # the frame's length is pushed into clenq one clock after its end (a registered
        # push keeps the feeder's handshake off the FIFO's write logic).
        with m.If(fd_fire):
            m.d.sync += c_len.eq(Mux(is_prefix, 4, c_len + clen_add))
            with m.If(fd_tail):
                m.d.sync += [fd_tail.eq(0), fd_groups.eq(0)]
            with m.Elif(~fd_groups):
                m.d.sync += fd_groups.eq(1)
            with m.Else():
                with m.If(g.last):
                    with m.If(tail_h.sep):
                        m.d.sync += fd_tail.eq(1)
                    with m.Else():
                        m.d.sync += fd_groups.eq(0)
        m.d.comb += [
            shimq.r_en.eq(ends_frame),
            tailq.r_en.eq(ends_frame),
        ]
        # Frame ends are at least two clocks apart (prefix, then a group or the tail), so
        # the w_rdy checked at the end still holds for the write one clock later; c_len
        # holds the frame's sum in that clock (a new prefix only reloads it at its end).
        # A separate tail's words for the D checksum (payload offset 4n is even: the
        # tail's byte 0 is a high byte): (t0 << 8 | t1) + (t2 << 8), bytes past r as
        # zeros; a tail inside a group is in the CompressionUnit's D already.
        clen_push = Signal()
        clen_tsum = Signal(17)
        t_b = [Mux(tail_h.sep & (tail_h.r > n), tail_h.tail[8 * n: 8 * n + 8], 0)
               for n in range(3)]
        m.d.sync += clen_push.eq(ends_frame)
        with m.If(ends_frame):
            m.d.sync += clen_tsum.eq(Cat(t_b[1], t_b[0]) + Cat(C(0, 8), t_b[2]))
        clen_w = Signal(CLenInfo)
        m.d.comb += [
            clen_w.clen.eq(c_len), clen_w.tsum.eq(clen_tsum),
            clenq.w_en.eq(clen_push), clenq.w_data.eq(clen_w),
        ]

        # ------------------------------------------------------------ comp writer
        # AlignmentUnit beats -> comp ring; a frame's region is capped at 288 beats (a
        # larger result is never sent: it cannot be smaller than the payload).
        cw_n = Signal(range(MAX_FRAME_BEATS + 2))
        cw_start = Signal(comp.wp.shape())
        cw_store = Signal(init=1)       # cw_n < MAX_FRAME_BEATS, as a flag (ready path)
        m.d.comb += [
            au.o.ready.eq(compq.w_rdy & (comp.w_room | ~cw_store)),
            comp.w_en.eq(au.o.valid & au.o.ready & cw_store),
            comp.w_data.eq(au.o.payload.data),
        ]
        cw_fire = Signal()
        m.d.comb += cw_fire.eq(au.o.valid & au.o.ready)
        with m.If(cw_fire):
            with m.If(au.o.payload.last):
                m.d.sync += [cw_n.eq(0), cw_store.eq(1), cw_start.eq(comp.wp + cw_store)]
            with m.Elif(cw_store):
                m.d.sync += [cw_n.eq(cw_n + 1), cw_store.eq(cw_n + 1 < MAX_FRAME_BEATS)]
        m.d.comb += [
            compq.w_en.eq(cw_fire & au.o.payload.last),
            compq.w_data.eq(Cat(cw_start, (comp.wp + cw_store)[:11])),
        ]

        # ---------------------------------------------------------------- finisher
        # One frame at a time, in order: wait for its results, decide, let HeaderRewrite
        # compute the patches, push the descriptor. About 8 clocks per frame.
        fr = Signal(FrontResult)
        m.d.comb += fr.eq(frontq.r_data)
        fin_ready = Signal()
        m.d.comb += fin_ready.eq(frontq.r_rdy & hsumq.r_rdy &
                                 (~fr.compress | (clenq.r_rdy & dsumq.r_rdy & compq.r_rdy)))
        x = Signal(FrontResult)
        x_hs = Signal(32)
        x_clen = Signal(17)
        x_dsum = Signal(16)
        x_tsum = Signal(17)
        x_ds = Signal(18)           # groups' D sum + tail words, folded in MODE
        x_comp = Signal(22)
        x_elig = Signal()
        x_win = Signal()
        x_mode = Signal(2)
        desc = Signal(Desc)
        # "In IDLE" as a flip-flop of its own: the FIFO reads below need no state decode.
        fin_idle = Signal(init=1)
        fin_take = Signal()
        m.d.comb += [
            fin_take.eq(fin_idle & fin_ready),
            frontq.r_en.eq(fin_take), hsumq.r_en.eq(fin_take),
            clenq.r_en.eq(fin_take & fr.compress),
            dsumq.r_en.eq(fin_take & fr.compress),
            compq.r_en.eq(fin_take & fr.compress),
        ]
        with m.FSM():
            with m.State("IDLE"):
                with m.If(fin_ready):
                    m.d.sync += fin_idle.eq(0)
                    m.d.sync += [x.eq(fr), x_hs.eq(hsumq.r_data), x_clen.eq(clenq.r_data[:17]),
                                 x_tsum.eq(clenq.r_data[17:34]),
                                 x_dsum.eq(dsumq.r_data), x_comp.eq(compq.r_data)]
                    m.next = "DECIDE"
            with m.State("DECIDE"):
                m.d.sync += [
                    x_elig.eq(x.compress & ~x.user & ~x.drop &
                              (x.frame_len >= x.info.min_frame_len)),
                    x_win.eq(x_clen < x.info.payload_len),
                    x_ds.eq(x_dsum + x_tsum),
                ]
                m.next = "MODE"
            with m.State("MODE"):
                m.d.sync += x_mode.eq(Mux(x.drop, MODE_DROP,
                                          Mux(x_elig & x_win, MODE_COMP, MODE_PASS)))
                m.d.comb += hr.start.eq(1)
                m.next = "REWRITE"
            with m.State("REWRITE"):
                with m.If(hr.done):
                    m.next = "PUSH"
            with m.State("PUSH"):
                m.d.comb += [descq.w_en.eq(1)]
                with m.If(descq.w_rdy):
                    m.d.sync += fin_idle.eq(1)
                    with m.Switch(x_mode):
                        with m.Case(MODE_DROP):
                            m.d.sync += self.dropped.eq(self.dropped + 1)
                        with m.Case(MODE_COMP):
                            m.d.sync += [
                                self.compressed.eq(self.compressed + 1),
                                self.payload_bytes_in.eq(self.payload_bytes_in + x.info.payload_len),
                                self.payload_bytes_out.eq(self.payload_bytes_out + x_clen),
                            ]
                        with m.Default():
                            with m.If(x_elig):
                                m.d.sync += self.fallback.eq(self.fallback + 1)
                            with m.Else():
                                m.d.sync += self.bypassed.eq(self.bypassed + 1)
                    m.next = "IDLE"
        # One's-complement fold of x_ds: two end-around carries (< 2^18 needs two).
        d_fold1 = Signal(17)
        d_fold2 = Signal(16)
        m.d.comb += [d_fold1.eq(x_ds[:16] + x_ds[16:]), d_fold2.eq(d_fold1[:16] + d_fold1[16])]
        # HeaderRewrite inputs (held in x while it runs).
        is_comp = Signal()
        is_fb = Signal()
        m.d.comb += [
            is_comp.eq(x_elig & x_win & ~x.drop),
            is_fb.eq(x_elig & ~x_win & ~x.drop),
            hr.compressed.eq(is_comp), hr.fallback.eq(is_fb),
            hr.udp.eq(x.info.udp), hr.l3.eq(x.info.l3), hr.ihl.eq(x.info.ihl),
            hr.l4.eq(x.info.l4), hr.proto.eq(x.info.proto), hr.tos.eq(x.info.tos),
            hr.ip_total_len.eq(x.info.ip_total_len), hr.payload_len.eq(x.info.payload_len),
            hr.c_len.eq(x_clen), hr.l4_csum.eq(x.info.l4_csum),
            hr.ip_rest_sum.eq(x_hs[:16]), hr.l4_hdr_sum.eq(x_hs[16:]), hr.d_sum.eq(d_fold2),
        ]
        out_len = Signal(17)
        m.d.comb += out_len.eq(Mux(x_mode == MODE_COMP,
                                   x.info.payload_offset + x_clen, x.frame_len))
        m.d.comb += [
            desc.mode.eq(x_mode), desc.user.eq(x.user & (x_mode == MODE_PASS)),
            desc.orig_start.eq(x.orig_start), desc.orig_next.eq(x.orig_start + x.stored),
            desc.has_comp.eq(x.compress),
            desc.comp_start.eq(x_comp[:11]), desc.comp_next.eq(x_comp[11:]),
            desc.nbeats.eq((out_len + BEAT_BYTES - 1) >> 5),
            desc.last_bytes.eq((out_len - 1)[:5] + 1),
            desc.pb.eq(x.info.payload_offset[5:]), desc.plane.eq(x.info.payload_offset[:5]),
            desc.patches.eq(hr.patches),
            descq.w_data.eq(desc),
        ]

        # ------------------------------------------------------------------ egress
        # E0 issues one beat read per clock (both stores), E1 has the BRAM data and
        # merges / patches it, E2 pushes into outq. Reads are issued only with room in
        # outq for every beat in flight, so the pipeline never has to stall.
        e_active = Signal()
        e = Signal(Desc)
        e_b = Signal(9)             # beat index in the output frame
        e_is_last = Signal()        # the next beat issued is the frame's last
        e_left = Signal(9)          # beats still to issue
        e_drop = Signal()
        # Beats issued and not yet taken from outq; the room flag is registered (one
        # clock stale, so it keeps one more entry free) to keep it off the issue path.
        occ = Signal(range(outq.depth + 1))
        room = Signal()
        m.d.sync += room.eq(occ < outq.depth - 2)
        dh = Signal(Desc)
        m.d.comb += dh.eq(descq.r_data)
        issue = Signal()
        e_lastb = Signal()
        m.d.comb += [
            e_lastb.eq(e_is_last),
            issue.eq(e_active & ~e_drop & room),
        ]
        e_done = Signal()           # the current descriptor is finished this clock
        m.d.comb += e_done.eq(e_active & (e_drop | (issue & e_is_last)))
        e_load = Signal()
        m.d.comb += [e_load.eq(descq.r_rdy & (~e_active | e_done)), descq.r_en.eq(e_load)]
        with m.If(e_done):
            m.d.sync += e_active.eq(0)
        # e_b's low beats one-hot (0 past beat 7: patches and the payload start beat pb
        # lie in beats 0..4), and "e_b > pb": flags, so the per-beat patch and merge
        # selects are a bit pick instead of 9-bit compares against the beat counter.
        e_at = Signal(8)
        e_gt_pb = Signal()
        e_at_pb = switch_pick(m, e_at, e.pb, "e_at_pb")
        with m.If(issue):
            m.d.sync += [e_b.eq(e_b + 1), e_left.eq(e_left - 1), e_is_last.eq(e_left == 2),
                         e_at.eq(e_at << 1), e_gt_pb.eq(e_gt_pb | e_at_pb)]
        with m.If(e_load):
            m.d.sync += [e_active.eq(1), e.eq(dh), e_b.eq(0), e_left.eq(dh.nbeats),
                         e_is_last.eq(dh.nbeats == 1), e_drop.eq(dh.mode == MODE_DROP),
                         e_at.eq(1), e_gt_pb.eq(0)]
        m.d.sync += occ.eq(occ + issue - (self.o.valid & self.o.ready))
        # Releasing a frame's ring entries once its last beat is read.
        m.d.comb += [
            orig.rel_en.eq(e_done), orig.rel.eq(e.orig_next),
            comp.rel_en.eq(e_done & e.has_comp), comp.rel.eq(e.comp_next),
        ]
        is_c = Signal()
        m.d.comb += is_c.eq(e.mode == MODE_COMP)
        m.d.comb += [
            orig.r_en.eq(issue), orig.r_addr.eq((e.orig_start + e_b)[:orig.addr_width]),
            comp.r_en.eq(issue), comp.r_addr.eq((e.comp_start + e_b - e.pb)[:comp.addr_width]),
        ]
        # E0 -> E1 control: per byte lane, a 2-bit code of its source (orig store, comp
        # store, or one of two patch words) and a zero flag (past keep), so that E1 is
        # one 4:1 mux per bit (one LUT6) with the zero as the output flip-flops'
        # synchronous reset. Two patch candidates per word suffice because of where the
        # patched fields can sit (l3 is 14 or 18, so l3 = 2 mod 4 and l4 = l3 + 4 IHL =
        # 2 mod 4; see HeaderRewrite):
        # - Y, the IP header fields, beat 0 only: ToS word (l3) on word 7 or 9, total
        #   length (l3 + 2) on word 8 or 10, IP checksum (l3 + 10) on word 12 or 14;
        # - X, the L4 fields, beats 1 and 2 only: UDP length (l4 + 4) on odd words, the
        #   UDP checksum (l4 + 6) on even words, the TCP checksum (l4 + 16) on odd words;
        #   an odd word's X is the UDP length when that patch is on (UDP), else the
        #   checksum.
        SRC_ORIG, SRC_COMP, SRC_X, SRC_Y = 0, 1, 2, 3
        P_TOS, P_TOT, P_IPC, P_UDPL, P_L4C = range(PATCHES)
        Y_OF_WORD = {7: P_TOS, 9: P_TOS, 8: P_TOT, 10: P_TOT, 12: P_IPC, 14: P_IPC}
        sel_lo = Signal(BEAT_BYTES)     # lanes >= plane
        for j in range(BEAT_BYTES):
            m.d.comb += sel_lo[j].eq(e.plane <= j)
        e1_v, e1_last, e1_user = Signal(), Signal(), Signal()
        e1_keep = Signal(BEAT_BYTES)
        keep_last = Signal(BEAT_BYTES)
        for j in range(BEAT_BYTES):
            m.d.comb += keep_last[j].eq(e.last_bytes > j)
        keep = Signal(BEAT_BYTES)
        sel = Signal(BEAT_BYTES, attrs={"keep": 1})
        m.d.comb += [
            keep.eq(Mux(e_lastb, keep_last, ~0)),
            sel.eq(Mux(is_c & e_gt_pb, ~0, Mux(is_c & e_at_pb, sel_lo, 0))),
        ]
        # Patches are 16-bit words: per word of the beat, whether its X or Y patch lands
        # on it; values are registered with the codes (the descriptor may change under E1).
        words = BEAT_BYTES // 2
        hits = []
        for idx in range(PATCHES):
            p = e.patches[idx]
            hit = Signal(words, name=f"phit{idx}")
            on = Signal(name=f"pon{idx}")
            m.d.comb += on.eq(p.en & switch_pick(m, e_at, p.beat, f"pat{idx}"))
            for w in range(words):
                m.d.comb += hit[w].eq(on & (p.word == w))
            hits.append(hit)
        e1_code = [Signal(2, name=f"e1_code{j}") for j in range(BEAT_BYTES)]
        e1_zero = Signal(BEAT_BYTES)
        e1_px_even = Signal(16)
        e1_px_odd = Signal(16)
        e1_py = [Signal(16, name=f"e1_py{idx}") for idx in (P_TOS, P_TOT, P_IPC)]
        m.d.sync += e1_v.eq(issue)
        with m.If(issue):
            m.d.sync += [
                e1_last.eq(e_lastb), e1_user.eq(e.user & e_lastb), e1_keep.eq(keep),
                e1_zero.eq(~keep),
                e1_px_even.eq(e.patches[P_L4C].value),
                e1_px_odd.eq(Mux(e.patches[P_UDPL].en, e.patches[P_UDPL].value,
                                 e.patches[P_L4C].value)),
            ]
            for idx in (P_TOS, P_TOT, P_IPC):
                m.d.sync += e1_py[idx].eq(e.patches[idx].value)
            for w in range(words):
                # Kept (as is ``sel``): the code is then one LUT behind them; left free,
                # the mapper spreads the cone over a chain of small LUTs (7 levels).
                hit_x = Signal(name=f"phit_x{w}", attrs={"keep": 1})
                hit_y = Signal(name=f"phit_y{w}", attrs={"keep": 1})
                m.d.comb += [
                    hit_x.eq(hits[P_L4C][w] | (hits[P_UDPL][w] if w % 2 else 0)),
                    hit_y.eq(hits[Y_OF_WORD[w]][w] if w in Y_OF_WORD else 0),
                ]
                for j in (2 * w, 2 * w + 1):
                    m.d.sync += e1_code[j].eq(Mux(hit_y, SRC_Y, Mux(hit_x, SRC_X,
                                                  Mux(sel[j], SRC_COMP, SRC_ORIG))))
        # E1: merge and patch; a lane past keep is the flip-flops' synchronous reset.
        e2_v = Signal()
        e2 = Signal(AxisBeat)
        for j in range(BEAT_BYTES):
            lane = slice(8 * j, 8 * j + 8)
            w, h = j // 2, 8 * (j % 2)
            px = e1_px_odd if w % 2 else e1_px_even
            py = e1_py[Y_OF_WORD[w]] if w in Y_OF_WORD else C(0, 16)
            src = [orig.r_data[lane], comp.r_data[lane], px[h:h + 8], py[h:h + 8]]
            c = e1_code[j]
            m.d.sync += e2.data[lane].eq(
                Mux(e1_zero[j], 0, Mux(c[1], Mux(c[0], src[3], src[2]),
                                       Mux(c[0], src[1], src[0]))))
        m.d.sync += [e2_v.eq(e1_v), e2.keep.eq(e1_keep),
                     e2.last.eq(e1_last), e2.user.eq(e1_user)]
        m.d.comb += [outq.w_en.eq(e2_v), outq.w_data.eq(e2)]

        # ------------------------------------------------------------------ output
        o_beat = Signal(AxisBeat)
        m.d.comb += [
            o_beat.eq(outq.r_data),
            self.o.valid.eq(outq.r_rdy), self.o.payload.eq(o_beat), outq.r_en.eq(self.o.ready),
        ]
        with m.If(self.o.valid & self.o.ready & o_beat.last):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)
        return m
