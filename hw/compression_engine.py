"""CompressionEngine (TX, paper Sec. VI-A, Fig. 9): compresses eligible frames in flight.

Store-and-forward, one 32-byte beat per clock in and out. Stages (``hw/tx/``) and the
FIFOs between them (entries; * a FastFifo, whose reader decides ``r_en`` late):

    i ─► ingress ─┬─► orig ring (FrameStore, every frame as received) ──────────┐
                  ├─ infoq [32*], cfgq [32*] ─► dispatcher                      │
                  └─ beatq [16] ─► front ◄─ modeq [4*], rl_cfg ─ dispatcher     │
    front ─ rs_rl [4*] ─► grouper ◄─ kq [4*] ─ dispatcher                       │
    grouper ─► CompressionUnit ─► feeder ◄─ shimq [4*] ─ dispatcher             │
    grouper ─ tailq [4*] ─► feeder ─ rs_vec [4*] ─► AlignmentUnit ─► cwriter    │
    cwriter ─► comp ring (FrameStore) ────────────────────────────────────────┐ │
    front ─ frontq [8], hsumq [16], ckq [16] ─► finisher ◄─ clenq [8], dsumq [16] ─ feeder│ │
    cwriter ─ compq [8] ─► finisher ─ descq [4] ─► egress ◄─ comp ring, orig ring
    egress ─► outq [8] ─► o

- ingress: beats into the orig ring and beatq; PacketMatcher -> infoq; config -> cfgq.
- dispatcher: per frame, compress or not; per-frame parameters to front, realigner,
  grouper and feeder ahead of time, so frames follow without a bubble.
- front: Realigner (skip P, length L) and the header checksums (IP rest, L4 header).
- grouper: 8 values + count per CompressionUnit group, tail bytes aside.
- feeder: [P mod 32 placeholders + shim] groups [tail] into the AlignmentUnit (its beats
  already on the output frame's byte lanes), |C| and the D checksum.
- cwriter: the compressed payload into the comp ring.
- finisher: per frame, in order: bypass / fall-back / compressed / drop, header patches.
- egress: header beats from the orig ring and payload beats from the comp ring merged at
  byte P, patches applied.

Rates: compression runs while the frame streams in, so the store only has to hold a
frame until its turn on the wire; both rings hold 1024 beats (>= 3 maximum frames), so
back-to-back frames keep the input at one beat per clock (compressible payloads). The
compression path carries 32 bytes per clock into the AlignmentUnit, so payloads that
grow (all 32-bit values) throttle the input slightly (fall-back frames).

Register slices (4-entry FastFifos in distributed RAM: rs_rl, rs_vec, and the feeder's
own input slice) cut the ready chain comp writer -> AlignmentUnit -> feeder ->
CompressionUnit -> group former -> realigner -> front, so no ready signal ripples through
more than one block (the CompressionUnit registers its own input).
Latency from a frame's last input beat to its first output beat: about 50 clocks.

Configuration ``enable``, ``dscp``, ``k``, ``codec``, ``version`` is sampled on each
frame's first beat. ``codec`` picks the codec: 0, the paper's (wire format version 1,
shim magic 0xC5, k in 1..126); 1, the bounded codec ``inceptionn_eb`` (k in 1..16),
written in the wire version ``version`` names: 2 (shim magic 0xC6) or 3 (0xC7 and a
check word over the header fields and the shim, docs/wire-format.md section 10; the
default), any other value bypasses. Only the CompressionBlocks' 8-bit field and the
decoded value behind the L4 checksum depend on the codec; version 3 adds the check
word's 4 bytes after the shim, written by the egress's patches (HeaderRewrite runs the
CRC once |C| is known). Frames longer than MAX_FRAME_BYTES are dropped and counted; a
frame with ``tuser`` set, or with the engine disabled or k outside its codec's range,
is forwarded unchanged (bypassed, counted).
"""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .alignment_unit import AlignmentUnit, ByteVector
from .axis import AxisBeat, axis_signature
from .compression_unit import CompressionUnit
from .frame_store import FrameStore
from .packet_matcher import MatchInfo
from .pipeline import Pipeline
from .tx.comp_writer import CompWriter
from .tx.dispatcher import Dispatcher
from .tx.egress import Egress
from .tx.feeder import Feeder
from .tx.finisher import Finisher
from .tx.front import Front
from .tx.group_former import GroupFormer
from .tx.ingress import Ingress
from .tx.layouts import (CheckFields, CLenInfo, CodecK, FrameCfg, FrameMode, HdrSums, ShimInfo,
                         TailInfo, comp_region, desc, front_result)
from .wire import CODEC_PORT_DEFAULT, DSCP_DEFAULT, K_DEFAULT, MAX_FRAME_BEATS, VERSION_DEFAULT

__all__ = ["CompressionEngine", "MAX_FRAME_BEATS"]

# FIFOs written by a strobe (valid only in the clock of the write).
_STROBED = ("infoq", "cfgq", "modeq", "kq", "shimq", "tailq", "hsumq", "ckq", "clenq",
            "dsumq", "compq")

_COUNTERS = ("compressed", "version1", "version2", "version3", "bypassed", "fallback", "dropped",
             "payload_bytes_in", "payload_bytes_out")


class CompressionEngine(wiring.Component):
    """TX engine. Ports: ``i``/``o`` AXI streams (``AxisBeat``), config ``enable``,
    ``dscp``, ``k``, ``codec``, ``version``; counters (frames: 32 bits, bytes: 48 bits)."""

    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=DSCP_DEFAULT)
    k: In(7, init=K_DEFAULT)
    codec: In(1, init=CODEC_PORT_DEFAULT)
    version: In(2, init=VERSION_DEFAULT)
    frames_in: Out(32)
    frames_out: Out(32)
    compressed: Out(32)
    version1: Out(32)       # compressed frames in wire format version 1 / 2 / 3
    version2: Out(32)
    version3: Out(32)
    bypassed: Out(32)
    fallback: Out(32)
    dropped: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def __init__(self, store_depth=1024):
        # Each ring must hold a whole frame of MAX_FRAME_BEATS beats plus the entry a
        # FrameStore keeps spare, or a maximum frame would wait for room forever; the
        # depth sets every ring pointer's width (FrameStore.addr_width + 1).
        if (not isinstance(store_depth, int) or store_depth & (store_depth - 1)
                or store_depth <= MAX_FRAME_BEATS + 1):
            self._MustUse__silence = True      # a refused engine is not an unused one
            raise ValueError(
                f"store_depth must be a power of two holding a maximum frame "
                f"({MAX_FRAME_BEATS} beats) and a spare entry, i.e. >= 512; got {store_depth!r}")
        self.store_depth = store_depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        self.pipeline = pl = Pipeline(m, self)
        orig = pl.add("orig", FrameStore(self.store_depth))
        pl.add("comp", FrameStore(self.store_depth))
        aw = orig.addr_width
        ingress = pl.add("ingress", Ingress(aw))
        pl.add("dispatcher", Dispatcher())
        pl.add("front", Front(aw))
        pl.add("grouper", GroupFormer())
        pl.add("cu", CompressionUnit())
        pl.add("feeder", Feeder())
        # The egress zeroes bytes past keep, so the AlignmentUnit need not clear them.
        pl.add("au", AlignmentUnit(clear_stale=False))
        pl.add("cwriter", CompWriter(aw))
        finisher = pl.add("finisher", Finisher(aw))
        egress = pl.add("egress", Egress(aw))

        # ingress: every beat to the orig ring and the front; per frame, match info and
        # config to the dispatcher. infoq and cfgq are written without a w_rdy check: a
        # frame's entries wait there only while its beats are in beatq (16), and 32
        # entries (the same LUTRAM as 16) cover the one a FastFifo keeps spare.
        pl.connect("in", "ingress.i")
        m.d.comb += [ingress.enable.eq(self.enable), ingress.dscp.eq(self.dscp),
                     ingress.k.eq(self.k), ingress.codec.eq(self.codec),
                     ingress.version.eq(self.version),
                     self.frames_in.eq(ingress.frames_in)]
        pl.connect("ingress.store", "orig", "frames")
        pl.fifo("beatq", "ingress.beats", "front.beats", AxisBeat, 16)
        pl.fifo("infoq", "ingress.info", "dispatcher.info", MatchInfo, 32, fast=True)
        pl.fifo("cfgq", "ingress.cfg", "dispatcher.cfg", FrameCfg, 32, fast=True)

        # dispatcher: its decision drives the FastFifos' r_en / w_en in the same clock.
        pl.fifo("modeq", "dispatcher.mode", "front.mode", FrameMode, 4, fast=True)
        pl.connect("dispatcher.rl_cfg", "front.rl_cfg")
        pl.fifo("kq", "dispatcher.k", "grouper.k", CodecK, 4, fast=True)
        pl.fifo("shimq", "dispatcher.shim", "feeder.shim", ShimInfo, 4, fast=True)

        # compression path: front -> grouper -> CompressionUnit -> feeder -> AlignmentUnit
        # -> comp ring.
        pl.fifo("rs_rl", "front.o", "grouper.i", AxisBeat, 4, fast=True)
        pl.connect("grouper.o", "cu.i")
        pl.connect("grouper.cu_k", "cu", "k")
        pl.fifo("tailq", "grouper.tail", "feeder.tail", TailInfo, 4, fast=True)
        pl.connect("cu.o", "feeder.groups")
        pl.connect("cu", "feeder.decoded", "decoded D")
        pl.fifo("rs_vec", "feeder.o", "au.i", ByteVector, 4, fast=True)
        pl.connect("au.o", "cwriter.i")
        pl.connect("cwriter.store", "comp", "payload")

        # finisher: per frame, in order, the results of front, feeder and comp writer.
        pl.fifo("frontq", "front.result", "finisher.front", front_result(aw), 8)
        pl.fifo("hsumq", "front.hsum", "finisher.hsum", HdrSums, 16)
        pl.fifo("ckq", "front.ck", "finisher.ck", CheckFields, 16)
        pl.fifo("clenq", "feeder.clen", "finisher.clen", CLenInfo, 8)
        pl.fifo("dsumq", "feeder.dsum", "finisher.dsum", 16, 16)
        pl.fifo("compq", "cwriter.region", "finisher.region", comp_region(aw), 8)
        for c in _COUNTERS:
            m.d.comb += getattr(self, c).eq(getattr(finisher, c))

        # egress: descriptors in, both rings read and released, output beats.
        pl.fifo("descq", "finisher.desc", "egress.desc", desc(aw), 4)
        pl.connect("orig", "egress.orig", "header beats")
        pl.connect("comp", "egress.comp", "payload beats")
        pl.connect("egress.o", "out")
        m.d.comb += self.frames_out.eq(egress.frames_out)
        if platform == "formal":
            # Writes whose valid is a strobe (some never look at ready, by the sizing
            # arguments above): never into a full FIFO (tests/formal).
            for name in _STROBED:
                f = pl.fifos[name]
                m.d.comb += Assert(~f.i.valid | f.i.ready, f"{name} written while full")
        return m
