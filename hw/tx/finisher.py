"""TX finisher: per frame, the output decision and the header patches."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..header_rewrite import HeaderRewrite
from ..wire import BEAT_BYTES, SHIM_MAGIC_V3
from .layouts import (DEFAULT_AW, MODE_COMP, MODE_DROP, MODE_PASS, CheckFields, CLenInfo,
                      HdrSums, comp_region, front_result)
from .layouts import desc as desc_layout

__all__ = ["Finisher"]


class Finisher(wiring.Component):
    """One frame at a time, in order: wait for its results, decide, let HeaderRewrite
    compute the patches, push the descriptor. About 8 clocks per frame.

    Inputs, one entry per frame: ``front`` (FrontResult), ``hsum`` (header word sums) and
    ``ck`` (the header bytes version 3's check word covers) for every frame; ``clen`` (|C| and a separate tail's word sum), ``dsum`` (the groups'
    D sum, not folded) and ``region`` (the frame's comp ring region) only for frames with
    ``front.compress``. A frame is taken when all of its entries are valid; ``ready`` is
    driven from the valids (the inputs are FIFO outputs). Output: ``desc``.

    Decision: drop a frame past the size limit; send it compressed when it was eligible
    (compress, no ``tuser``, at least the minimum frame length) and |C| < L; else pass it
    unchanged (fall-back when eligible, bypass otherwise). The counters count each. A
    version-3 frame's check message (golden.shim_check.check_message, with |C| and the
    shim) goes to HeaderRewrite, whose patches write the check word.
    """

    def __init__(self, aw=DEFAULT_AW):
        # aw: the rings' address width (their pointers are aw + 1 bits in the layouts).
        self.aw = aw
        super().__init__({
            "front": In(stream.Signature(front_result(aw))),
            "hsum": In(stream.Signature(HdrSums)),
            "ck": In(stream.Signature(CheckFields)),
            "clen": In(stream.Signature(CLenInfo)),
            "dsum": In(stream.Signature(16)),
            "region": In(stream.Signature(comp_region(aw))),
            "desc": Out(stream.Signature(desc_layout(aw))),
            "compressed": Out(32),
            "version1": Out(32),       # compressed frames per wire format version
            "version2": Out(32),
            "version3": Out(32),
            "bypassed": Out(32),
            "fallback": Out(32),
            "dropped": Out(32),
            "payload_bytes_in": Out(48),
            "payload_bytes_out": Out(48),
        })
        # A frame taken, its descriptor not pushed: driven only when elaborated for
        # formal checks (platform "formal").
        self.formal_busy = Signal()

    def elaborate(self, platform):
        m = Module()
        m.submodules.rewrite = hr = HeaderRewrite()
        FrontResult, CompRegion, Desc = (front_result(self.aw), comp_region(self.aw),
                                         desc_layout(self.aw))
        fr = Signal(FrontResult)
        m.d.comb += fr.eq(self.front.payload)
        fin_ready = Signal()
        m.d.comb += fin_ready.eq(self.front.valid & self.hsum.valid & self.ck.valid &
                                 (~fr.compress | (self.clen.valid & self.dsum.valid &
                                                  self.region.valid)))
        x = Signal(FrontResult)
        x_hs = Signal(HdrSums)
        x_ck = Signal(CheckFields)
        x_clen = Signal(17)
        x_dsum = Signal(16)
        x_tsum = Signal(17)
        x_ds = Signal(18)           # groups' D sum + tail words, folded in MODE
        x_comp = Signal(CompRegion)
        x_elig = Signal()
        x_win = Signal()
        x_mode = Signal(2)
        desc = Signal(Desc)
        # "In IDLE" as a flip-flop of its own: the FIFO reads below need no state decode.
        fin_idle = Signal(init=1)
        fin_take = Signal()
        # The compressed-only entries' reads (fin_take & compress), flat on the FIFOs'
        # output flip-flops and kept: derived from fin_take they mapped to 4 levels in
        # front of a FIFO's level counter (7 in all).
        comp_take = Signal(attrs={"keep": 1})
        m.d.comb += [
            fin_take.eq(fin_idle & fin_ready),
            comp_take.eq(fin_idle & self.front.valid & self.hsum.valid & self.ck.valid &
                         fr.compress & self.clen.valid & self.dsum.valid & self.region.valid),
            self.front.ready.eq(fin_take), self.hsum.ready.eq(fin_take),
            self.ck.ready.eq(fin_take),
            self.clen.ready.eq(comp_take),
            self.dsum.ready.eq(comp_take),
            self.region.ready.eq(comp_take),
        ]
        with m.FSM() as fsm:
            with m.State("IDLE"):
                with m.If(fin_ready):
                    m.d.sync += fin_idle.eq(0)
                    m.d.sync += [x.eq(fr), x_hs.eq(self.hsum.payload), x_ck.eq(self.ck.payload),
                                 x_clen.eq(self.clen.payload.clen),
                                 x_tsum.eq(self.clen.payload.tsum),
                                 x_dsum.eq(self.dsum.payload), x_comp.eq(self.region.payload)]
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
                m.d.comb += [self.desc.valid.eq(1)]
                with m.If(self.desc.ready):
                    m.d.sync += fin_idle.eq(1)
                    with m.Switch(x_mode):
                        with m.Case(MODE_DROP):
                            m.d.sync += self.dropped.eq(self.dropped + 1)
                        with m.Case(MODE_COMP):
                            m.d.sync += [
                                self.compressed.eq(self.compressed + 1),
                                self.version1.eq(self.version1 + ~x.v2),
                                self.version2.eq(self.version2 + (x.v2 & ~x.v3)),
                                self.version3.eq(self.version3 + x.v3),
                                self.payload_bytes_in.eq(self.payload_bytes_in + x.info.payload_len),
                                self.payload_bytes_out.eq(self.payload_bytes_out + x_clen),
                            ]
                        with m.Default():
                            with m.If(x_elig):
                                m.d.sync += self.fallback.eq(self.fallback + 1)
                            with m.Else():
                                m.d.sync += self.bypassed.eq(self.bypassed + 1)
                    m.next = "IDLE"
        if platform == "formal":
            # The IDLE flag is the FSM's IDLE (the liveness induction's invariant).
            m.d.comb += [self.formal_busy.eq(~fin_idle),
                         Assert(fin_idle == fsm.ongoing("IDLE"), "finisher: idle flag out of step"),
                         Assert(comp_take == (fin_take & fr.compress),
                                "finisher: flat compressed-entry read differs")]
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
            hr.ip_rest_sum.eq(x_hs.ip), hr.l4_hdr_sum.eq(x_hs.l4), hr.d_sum.eq(d_fold2),
            hr.v3.eq(x.v3), hr.p.eq(x.info.payload_offset),
        ]
        # Version 3's check message, byte j in bits [8j+7:8j]: the header fields as in
        # the frame, the protocol and a zero, no sequence number for UDP, |C| and L big
        # endian, the magic and k (docs/wire-format.md section 10).
        def be16(v):
            return Cat(v[8:16], v[0:8])
        m.d.comb += hr.check_msg.eq(Cat(
            x_ck.addrs, x_ck.ip_id, x.info.proto, C(0, 8), x_ck.ports,
            Mux(x.info.udp, 0, x_ck.seq), be16(x_clen[:16]), be16(x.info.payload_len),
            C(SHIM_MAGIC_V3, 8), x.k, C(0, 1)))
        out_len = Signal(17)
        m.d.comb += out_len.eq(Mux(x_mode == MODE_COMP,
                                   x.info.payload_offset + x_clen, x.frame_len))
        m.d.comb += [
            desc.mode.eq(x_mode), desc.user.eq(x.user & (x_mode == MODE_PASS)),
            desc.orig_start.eq(x.orig_start), desc.orig_next.eq(x.orig_start + x.stored),
            desc.has_comp.eq(x.compress),
            desc.comp_start.eq(x_comp.start), desc.comp_next.eq(x_comp.next),
            desc.nbeats.eq((out_len + BEAT_BYTES - 1) >> 5),
            desc.last_bytes.eq((out_len - 1)[:5] + 1),
            desc.pb.eq(x.info.payload_offset[5:]), desc.plane.eq(x.info.payload_offset[:5]),
            desc.patches.eq(hr.patches),
            self.desc.payload.eq(desc),
        ]
        return m
