"""DecompressionEngine (RX, paper Fig. 10, spec section 4 RX): decompresses frames in flight.

Cut-through, one 32-byte beat per clock out. Stages (``hw/rx/``) and the wires between
them (the FIFOs are 4-entry register slices in distributed RAM):

    i ─► ingress ─ in_slice ─► hold ──► matcher ─► front ◄─ restore ◄─ hold
    hold ─ held frame, shim beat ─► front ─ take, restart ─► hold
    front ─ go, header offsets ─► check ◄─ held beats (as written) ─ hold;  check ─ done, ok ─► front
    front ─ feed (load) ─► feed ◄─ held beats, live beats ─ hold
    front ─ start ─► du ◄─ pieces ─ feed;  front ─ rl_cfg ─► realign
    du ─► words ─► realign ─► back ◄─ pending frame, PASS ─ front;  feed ─ end of input ─► back
    back ─ beat control ─► egress ◄─ header beats (hold), IP checksum (restore), lengths (front)
    egress ─ out_slice ─► o

- ingress: each beat's byte count and VLAN test, before the input slice.
- hold: HEAD, the frame's first beats (up to ``HOLD_BEATS``: the shim ends at byte 141
  at most) written once into a two-bank beat memory (the front half fills one bank
  while the back half may still read the other's header beats: ACT hands the bank
  over, nothing is copied); the input's ready for every state that takes input beats.
- matcher (PacketMatcher): sniffs every taken beat, reports once per frame.
- restore (HeaderRestore): sums the IP header words as the hold takes the beats, adds
  the restored total length once the frame is started: the restored IP checksum.
- check: version 3's check word (docs/wire-format.md section 10), recomputed from a
  copy of the held beats (taken as the hold writes them) while the frame is held: the
  CRC-32 of the header fields and shim bytes 0-3 (ShimCheck), compared with shim bytes
  4-7, 3 clocks after MATCH, before the front half decides.
- front: MATCH (the matcher's result; L, the magic and k from the shim; starts the
  check), SH2, VER (the magic against the accepted versions), CHECK (with the check's
  answer: every per-frame sum and compare, so that ACT only copies registers), ACT: decompress
  or pass; loads the feed and the pending-frame slot, starts the unit (with the codec
  and, for versions 2 and 3, the shim's k) and the Realigner. The versions ``versions``
  names (a mask sampled with each frame's first beat, like ``enable``; version 3 only
  by default) are accepted: 0xC5 (the paper's codec), 0xC6 (the bounded codec, k in
  1..16, L restorable from the received bytes), 0xC7 (version 2's rules with the 8-byte
  shim, and the check word matches); any other shim is forwarded unchanged, and so is
  a version-3 frame whose check word does not match (counted in ``check_failed``).
- feed: the compressed bytes (shim stripped, Ethernet padding dropped) into the unit:
  the held beats, then the live input; then DRAIN and the end-of-input slot (tuser, cut
  short).
- du (DecompressionUnit) and words: 4n + r payload bytes as 32-byte words, the error on
  the last one's ``user``; realign (Realigner): onto the byte lanes they take after P.
- back: the pending frame's output beats: held bypass beats then the rest live from the
  input (PASS), or the header beats then the realigned payload, merged with the header
  beat that holds byte P: P + L bytes, ``user`` on the last beat if the payload was
  malformed, the input was cut short, or the input frame had ``user`` set.
- egress: each beat from its sources, the restored IP total length, IP checksum and UDP
  length put on their byte lanes (flags loaded with the frame, from VLAN, IHL and UDP).

Timing (at most 6 LUT levels between registers): what the stages decide each clock
comes from registers prepared a step ahead. States are one-hot flag registers; the
feed keeps "more than a beat left" and "the current held beat ends the stream" as flags,
and the input's last beat, if the compressed stream may end in it, waits one clock for a
registered compare of its byte count (the input side has slack); the back half's
handshake per state is one flat AND of flags; the memory's read addresses are registers.
The stage boundaries that carry a combinational handshake (the unit's ready into the
feed and the input's ready, the output's ready into the back half) are stated in the
stages' docstrings.

The front half moves on to the next frame as soon as the current one's input is in,
so a frame's header work overlaps the previous frame's output and, with the sink
always ready, the output runs at one beat per clock across frames.

Because the decision is taken from the header, a frame whose IP total length claims
more bytes than actually arrive can only be caught once it is held in full (frames
of up to ``HOLD_BEATS`` beats, which are then forwarded unchanged); a longer one is
decompressed with the missing bytes as zeros and flagged bad.
"""

from amaranth import *
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from .axis import AxisBeat, axis_signature
from .decompression_unit import DecompressionUnit
from .header_restore import HeaderRestore
from .packet_matcher import PacketMatcher
from .pipeline import Pipeline
from .realigner import Realigner
from .rx.back import Back
from .rx.check import Check
from .rx.egress import Egress
from .rx.feed import Feed
from .rx.front import Front
from .rx.hold import Hold
from .rx.ingress import Ingress
from .rx.layouts import HOLD_BEATS, InBeat
from .rx.words import Words
from .wire import DSCP_DEFAULT, VERSIONS_DEFAULT

__all__ = ["DecompressionEngine", "HOLD_BEATS"]

_COUNTERS = {"front": ("decompressed", "version1", "version2", "version3", "bypassed",
                       "check_failed", "payload_bytes_in", "payload_bytes_out"),
             "back": ("malformed",), "hold": ("frames_in",), "egress": ("frames_out",)}


class DecompressionEngine(wiring.Component):
    """RX engine. Ports: ``i``/``o`` AXI streams (``AxisBeat``), config ``enable``,
    ``dscp``, ``versions`` (bit v - 1: accept wire version v); counters (frames: 32 bits,
    bytes: 48 bits)."""

    i: In(axis_signature())
    o: Out(axis_signature())
    enable: In(1, init=1)
    dscp: In(6, init=DSCP_DEFAULT)
    versions: In(3, init=VERSIONS_DEFAULT)
    frames_in: Out(32)
    frames_out: Out(32)
    decompressed: Out(32)
    version1: Out(32)       # decompressed frames in wire format version 1 / 2 / 3
    version2: Out(32)
    version3: Out(32)
    bypassed: Out(32)
    check_failed: Out(32)   # of bypassed: version-3 frames refused by their check word
    malformed: Out(32)
    payload_bytes_in: Out(48)
    payload_bytes_out: Out(48)

    def elaborate(self, platform):
        m = Module()
        self.pipeline = pl = Pipeline(m, self)
        pl.add("ingress", Ingress())
        hold = pl.add("hold", Hold())
        matcher = pl.add("matcher", PacketMatcher())
        pl.add("restore", HeaderRestore())
        pl.add("front", Front())
        pl.add("check", Check())
        pl.add("feed", Feed())
        # The unit's words go straight into the Realigner's input register slice (its
        # ready is a flip-flop), so the unit leaves its own output slice out.
        pl.add("du", DecompressionUnit(out_slice=False))
        pl.add("words", Words())
        pl.add("realign", Realigner())
        pl.add("back", Back())
        pl.add("egress", Egress())
        m.d.comb += [hold.enable.eq(self.enable), hold.versions.eq(self.versions),
                     matcher.dscp.eq(self.dscp)]

        # Beat-wide register slices (4-entry FastFifos in distributed RAM) at both ports.
        pl.connect("in", "ingress.i")
        pl.fifo("in_slice", "ingress.o", "hold.beats", InBeat, 4, fast=True)

        # hold: every taken beat past the matcher, the header beats past the
        # HeaderRestore, the held frame to the front half; the input beat to the feed
        # and the back half (the input's ready is the OR of the states that take it).
        pl.connect("hold.sniff", "matcher", "beats")
        pl.connect("hold.restore", "restore", "header beats")
        pl.connect("hold.front", "front.hold", "held frame, shim beat; take, restart")
        pl.connect("matcher", "front.matcher", "info")
        pl.connect("front.check", "check.front", "go, header offsets; done, match")
        pl.connect("hold.check", "check.hold", "held beats")
        pl.connect("hold.feed", "feed.hold", "held beats, live beats")
        pl.connect("hold.back", "back.hold", "live bypass beats")

        # front: per frame, the feed's registers, the unit's and the Realigner's start,
        # the HeaderRestore's start, the pending slot for the back half.
        pl.connect("front.feed", "feed.front", "load, pending frame; read address, input done")
        pl.connect("front.start", "du.start")
        pl.connect("front.rl_cfg", "realign.cfg")
        pl.connect("front.restore", "restore", "start, IP total length; done")
        pl.connect("front.back", "back.front", "pending frame, PASS; release, PASS ends")

        # decompression: feed -> unit -> words -> Realigner -> back half.
        pl.connect("feed.o", "du.i")
        pl.connect("du.o", "words.i")
        pl.connect("words.o", "realign.i")
        pl.connect("realign.o", "back.words")
        pl.connect("feed.back", "back.feed", "end of input")

        # back half -> egress (the restored fields, the header beats' memory port).
        pl.connect("back.o", "egress.ctl")
        pl.connect("hold.egress", "egress.hold", "header beats")
        pl.connect("restore", "egress.restore", "IP checksum")
        pl.connect("front.egress", "egress.front", "restored lengths")
        pl.fifo("out_slice", "egress.o", "out", AxisBeat, 4, fast=True)
        for stage, names in _COUNTERS.items():
            for c in names:
                m.d.comb += getattr(self, c).eq(getattr(pl.stages[stage], c))
        return m
