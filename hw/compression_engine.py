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
from .pipeline import Pipeline
from .primitives import FifoSlice, StreamFifo, add_fifo, keep_count
from .compression_unit import CompressionUnit
from .frame_store import FrameStore
from .packet_matcher import MatchInfo, PacketMatcher
from .realigner import Realigner
from .tx.comp_writer import CompWriter
from .tx.egress import Egress
from .tx.finisher import Finisher
from .tx.layouts import (CLenInfo, CompRegion, Desc, FedGroup, FrameCfg, FrameMode,
                         FrontResult, ShimInfo, TailInfo)
from .wire import (BEAT_BITS, BEAT_BYTES, DEFAULT_DSCP, K_DEFAULT, K_MAX, K_MIN, MAX_FRAME_BEATS,
                   SHIM_MAGIC)

__all__ = ["CompressionEngine"]


class _StreamFifoPorts:
    """A StreamFifo written by hand (w_en / w_data / w_rdy name its input stream)."""

    def __init__(self, m, name, shape, depth, fast=False):
        self.fifo = f = StreamFifo(shape, depth, fast=fast)
        m.submodules[name] = f
        self.w_en, self.w_data, self.w_rdy = f.i.valid, f.i.payload, f.i.ready
        self.o = f.o


def _store_write(m, store, port):
    m.d.comb += [store.w_en.eq(port.w_en), store.w_data.eq(port.w_data),
                 port.w_room.eq(store.w_room), port.wp.eq(store.wp)]


def _store_read(m, store, port):
    m.d.comb += [store.r_en.eq(port.r_en), store.r_addr.eq(port.r_addr),
                 port.r_data.eq(store.r_data),
                 store.rel_en.eq(port.rel_en), store.rel.eq(port.rel)]


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
        self.pipeline = pl = Pipeline(m, self)

        orig = pl.add("orig", FrameStore(self.store_depth))
        comp = pl.add("comp", FrameStore(self.store_depth))
        aw = orig.addr_width
        cwriter = pl.add("cwriter", CompWriter(aw))
        finisher = pl.add("finisher", Finisher())
        egress = pl.add("egress", Egress(aw))
        _store_write(m, comp, cwriter.store)
        pl.wire("cwriter", "comp", "beats")
        _store_read(m, orig, egress.orig)
        _store_read(m, comp, egress.comp)
        pl.wire("orig", "egress", "header beats")
        pl.wire("comp", "egress", "payload beats")
        pl.fifo("compq", "cwriter.region", "finisher.region", CompRegion, 8)
        pl.fifo("descq", "finisher.desc", "egress.desc", Desc, 4)
        pl.connect("egress.o", "out")
        for c in ("compressed", "bypassed", "fallback", "dropped",
                  "payload_bytes_in", "payload_bytes_out"):
            m.d.comb += getattr(self, c).eq(getattr(finisher, c))
        m.d.comb += self.frames_out.eq(egress.frames_out)
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
        frontq = _StreamFifoPorts(m, "frontq", FrontResult, 8)
        hsumq = _StreamFifoPorts(m, "hsumq", 32, 16)
        clenq = _StreamFifoPorts(m, "clenq", CLenInfo, 8)
        dsumq = _StreamFifoPorts(m, "dsumq", 16, 16)
        for q, port in ((frontq, finisher.front), (hsumq, finisher.hsum),
                        (clenq, finisher.clen), (dsumq, finisher.dsum)):
            wiring.connect(m, q.o, port)

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
        wiring.connect(m, au.o, pl.stages["cwriter"].i)
        return m
