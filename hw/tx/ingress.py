"""TX ingress: takes the input frames into the orig ring, the beat FIFO and the matcher."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import AxisBeat, axis_signature
from ..packet_matcher import MatchInfo, PacketMatcher
from ..wire import (CODEC_PORT_DEFAULT, DSCP_DEFAULT, EB_K_MAX, K_DEFAULT, K_MAX, K_MIN,
                    MAX_FRAME_BEATS, VERSION_DEFAULT)
from .layouts import FrameCfg, store_write

__all__ = ["Ingress", "k_in_range"]


def k_in_range(k, codec, version):
    """k within the codec's range and, for the bounded codec (``codec`` 1), ``version``
    2 or 3: otherwise the engine forwards the frame unchanged."""
    return (k >= K_MIN) & Mux(codec, (k <= EB_K_MAX) & version[1], k <= K_MAX)


class Ingress(wiring.Component):
    """Every input beat goes to the orig ring (``store``; beats past MAX_FRAME_BEATS are
    not stored: the frame will be dropped) and to ``beats`` (the front stage's FIFO); the
    PacketMatcher sniffs the first beats and pushes the frame's MatchInfo to ``info``;
    the configuration (``enable``, ``k``, ``codec``, ``version``) is sampled on each
    frame's first beat into ``cfg``, with k checked against the codec's range and, for
    the bounded codec, ``version`` against 2..3 (the paper's codec is version 1 whatever
    ``version`` says). ``frames_in`` counts frames.

    Contract: ``i.ready`` is ``beats.ready`` and a free ring entry; ``info`` and ``cfg``
    are written without checking their ``ready`` (``valid`` is a write strobe): their
    FIFOs are sized so that they cannot overflow while ``beats`` (16 entries) holds the
    frames' beats (at most one entry per frame in ``beats``).
    """

    def __init__(self, aw):
        self.aw = aw
        super().__init__({
            "i": In(axis_signature()),
            "enable": In(1, init=1),
            "dscp": In(6, init=DSCP_DEFAULT),
            "k": In(7, init=K_DEFAULT),
            "codec": In(1, init=CODEC_PORT_DEFAULT),
            "version": In(2, init=VERSION_DEFAULT),
            "store": Out(store_write(aw)),
            "beats": Out(stream.Signature(AxisBeat)),
            "info": Out(stream.Signature(MatchInfo)),
            "cfg": Out(stream.Signature(FrameCfg)),
            "frames_in": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.matcher = pm = PacketMatcher()
        orig, beatq = self.store, self.beats
        in_q = Signal(range(MAX_FRAME_BEATS + 2))    # beat index in frame, saturating
        # in_q < MAX_FRAME_BEATS and in_q == 0 kept as flags: they sit on the ready path.
        in_store = Signal(init=1)
        in_first = Signal(init=1)
        m.d.comb += self.i.ready.eq(beatq.ready & (orig.w_room | ~in_store))
        in_fire = Signal()
        m.d.comb += in_fire.eq(self.i.valid & self.i.ready)
        m.d.comb += [
            beatq.valid.eq(in_fire), beatq.payload.eq(self.i.payload),
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
        # enable / k / codec / version are sampled at the first beat; the matcher samples
        # dscp itself.
        k_ok = Signal()
        m.d.comb += k_ok.eq(k_in_range(self.k, self.codec, self.version))
        m.d.comb += [
            self.cfg.valid.eq(in_fire & in_first),
            self.cfg.payload.eq(Cat(self.enable & k_ok, self.k, self.codec,
                                    self.codec & (self.version == 3))),
            pm.beat.eq(self.i.payload), pm.valid.eq(in_fire), pm.dscp.eq(self.dscp),
            self.info.valid.eq(pm.done), self.info.payload.eq(pm.info),
        ]
        return m
