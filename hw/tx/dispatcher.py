"""TX dispatcher: per frame, whether to compress it, and the per-frame parameters."""

from amaranth import *
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..packet_matcher import MatchInfo
from ..realigner import realigner_cfg
from ..wire import SHIM_MAGIC, SHIM_MAGIC_V2, SHIM_MAGIC_V3
from .layouts import CodecK, FrameCfg, FrameMode, ShimInfo

__all__ = ["Dispatcher"]


class Dispatcher(wiring.Component):
    """Pairs a frame's match info (``info``) with its config (``cfg``), decides whether to
    compress it (header parsed, engine enabled, k valid), and hands the per-frame
    parameters ahead of time to the front stage (``mode``, every frame), the realigner
    (``rl_cfg``: skip P, length L), the group former (``k``: k and codec) and the feeder
    (``shim``: P mod 32 and the shim word rotated by P mod 4; its byte 2 is the wire
    format version's magic, 0xC5, 0xC6 or 0xC7), the last three only for compressed
    frames, so that consecutive frames follow without a bubble. One frame per clock.

    Combinational handshake (kept so that the decision costs no clock): a frame is
    dispatched when ``info`` and ``cfg`` are valid and every output it goes to is ready;
    ``info.ready`` and ``cfg.ready`` are that decision, and the outputs' ``valid`` are
    write strobes that assume their ``ready``. ``info``/``cfg``/``mode``/``k``/``shim``
    sit on FastFifos (registered ``w_rdy``, short ``r_en`` paths) for this reason.
    """

    info: In(stream.Signature(MatchInfo))
    cfg: In(stream.Signature(FrameCfg))
    mode: Out(stream.Signature(FrameMode))
    rl_cfg: Out(stream.Signature(realigner_cfg()))
    k: Out(stream.Signature(CodecK))
    shim: Out(stream.Signature(ShimInfo))

    def elaborate(self, platform):
        m = Module()
        rl_cfg, kq, shimq, modeq = self.rl_cfg, self.k, self.shim, self.mode
        info_h = Signal(MatchInfo)
        cfg_h = Signal(FrameCfg)
        m.d.comb += [info_h.eq(self.info.payload), cfg_h.eq(self.cfg.payload)]
        want = Signal()
        m.d.comb += want.eq(info_h.header_ok & cfg_h.ok)
        disp = Signal()
        mode_w = Signal(FrameMode)
        shim_w = Signal(ShimInfo)
        m.d.comb += disp.eq(self.info.valid & self.cfg.valid & modeq.ready &
                            (~want | (rl_cfg.ready & kq.ready & shimq.ready)))
        m.d.comb += [
            self.info.ready.eq(disp), self.cfg.ready.eq(disp),
            modeq.valid.eq(disp), mode_w.info.eq(info_h), mode_w.compress.eq(want),
            mode_w.k.eq(cfg_h.k), mode_w.v2.eq(cfg_h.v2), mode_w.v3.eq(cfg_h.v3),
            modeq.payload.eq(mode_w),
            mode_w.bounds.ip4.eq(info_h.l3 + 4), mode_w.bounds.ip10.eq(info_h.l3 + 10),
            mode_w.bounds.ip12.eq(info_h.l3 + 12), mode_w.bounds.ip20.eq(info_h.l3 + 20),
            # the L4 checksum field: UDP l4 + 6, TCP l4 + 16
            mode_w.bounds.l4c.eq(info_h.l4 + Mux(info_h.udp, 6, 16)),
            mode_w.bounds.l4c2.eq(info_h.l4 + Mux(info_h.udp, 8, 18)),
            rl_cfg.valid.eq(disp & want),
            rl_cfg.payload.skip.eq(info_h.payload_offset),
            rl_cfg.payload.insert.eq(0),
            rl_cfg.payload.length.eq(info_h.payload_len),
            kq.valid.eq(disp & want), kq.payload.k.eq(cfg_h.k), kq.payload.v2.eq(cfg_h.v2),
            shimq.valid.eq(disp & want),
            shim_w.plane.eq(info_h.payload_offset[:5]), shim_w.v3.eq(cfg_h.v3),
            shimq.payload.eq(shim_w),
        ]
        shim_bytes = Signal(32)
        m.d.comb += shim_bytes.eq(Cat(info_h.payload_len[8:16], info_h.payload_len[:8],
                                      Mux(cfg_h.v3, SHIM_MAGIC_V3,
                                          Mux(cfg_h.v2, SHIM_MAGIC_V2, SHIM_MAGIC))[:8], cfg_h.k,
                                      C(0, 1)))
        with m.Switch(info_h.payload_offset[:2]):
            for c in range(4):
                with m.Case(c):
                    m.d.comb += shim_w.shim_rot.eq(
                        Cat(shim_bytes[32 - 8 * c:], shim_bytes[:32 - 8 * c]) if c else shim_bytes)
        return m
