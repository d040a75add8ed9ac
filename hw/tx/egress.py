"""TX egress: sends each frame's descriptor as output beats, merged and patched."""

from amaranth import *
from amaranth.hdl import Assert
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from ..axis import AxisBeat, axis_signature
from ..header_rewrite import PATCHES
from ..primitives import add_fifo, switch_pick
from ..wire import BEAT_BYTES
from .layouts import MODE_COMP, MODE_DROP, desc, store_read

__all__ = ["Egress"]


class Egress(wiring.Component):
    """Reads header beats from the orig store and payload beats from the comp store,
    merges them at byte P, applies the header patches, and releases a frame's ring entries
    once its last beat is read.

    E0 issues one beat read per clock (both stores), E1 has the BRAM data and merges /
    patches it, E2 pushes into the output FIFO (8 beats, part of this stage). Reads are
    issued only with room in the FIFO for every beat in flight, so the pipeline never
    stalls. ``desc``: descriptors (finisher); ``orig``/``comp``: the stores' read sides;
    ``o``: the engine's output; ``frames_out`` counts frames sent.
    """

    def __init__(self, aw):
        self.aw = aw
        super().__init__({
            "desc": In(stream.Signature(desc(aw))),
            "orig": Out(store_read(aw)),
            "comp": Out(store_read(aw)),
            "o": Out(axis_signature()),
            "frames_out": Out(32),
        })

    def elaborate(self, platform):
        m = Module()
        orig, comp = self.orig, self.comp
        Desc = desc(self.aw)
        outq = add_fifo(m, "outq", AxisBeat, 8)
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
        m.d.comb += dh.eq(self.desc.payload)
        issue = Signal()
        e_lastb = Signal()
        m.d.comb += [
            e_lastb.eq(e_is_last),
            issue.eq(e_active & ~e_drop & room),
        ]
        e_done = Signal()           # the current descriptor is finished this clock
        m.d.comb += e_done.eq(e_active & (e_drop | (issue & e_is_last)))
        e_load = Signal()
        m.d.comb += [e_load.eq(self.desc.valid & (~e_active | e_done)),
                     self.desc.ready.eq(e_load)]
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
        # "compressed" as a flag loaded with the descriptor (not decoded from its mode
        # field behind the register): the per-lane selects below start from it.
        e_is_c = Signal()
        with m.If(e_load):
            m.d.sync += [e_active.eq(1), e.eq(dh), e_b.eq(0), e_left.eq(dh.nbeats),
                         e_is_c.eq(dh.mode == MODE_COMP),
                         e_is_last.eq(dh.nbeats == 1), e_drop.eq(dh.mode == MODE_DROP),
                         e_at.eq(1), e_gt_pb.eq(0)]
        m.d.sync += occ.eq(occ + issue - (self.o.valid & self.o.ready))
        # Releasing a frame's ring entries once its last beat is read.
        m.d.comb += [
            orig.rel_en.eq(e_done), orig.rel.eq(e.orig_next),
            comp.rel_en.eq(e_done & e.has_comp), comp.rel.eq(e.comp_next),
        ]
        is_c = e_is_c
        m.d.comb += [
            orig.r_en.eq(issue), orig.r_addr.eq((e.orig_start + e_b)[:self.aw]),
            comp.r_en.eq(issue), comp.r_addr.eq((e.comp_start + e_b - e.pb)[:self.aw]),
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
        #   checksum;
        # - Y again, version 3's check word, beats 1-4 only (P + 4 >= 46): its high half
        #   (P + 4) on odd words, its low half on even words (P = 2 mod 4); a Y register
        #   holds the IP field in beat 0 and the check word's half past it.
        SRC_ORIG, SRC_COMP, SRC_X, SRC_Y = 0, 1, 2, 3
        P_TOS, P_TOT, P_IPC, P_UDPL, P_L4C, P_CKH, P_CKL = range(PATCHES)
        CK_OF_Y = {P_TOS: P_CKH, P_TOT: P_CKL, P_IPC: P_CKL}    # the half on the same words
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
        e1_ck = [Signal(16, name="e1_ck_lo"), Signal(16, name="e1_ck_hi")]   # by word parity
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
                m.d.sync += e1_py[idx].eq(Mux(e_at[0], e.patches[idx].value,
                                              e.patches[CK_OF_Y[idx]].value))
            m.d.sync += [e1_ck[0].eq(e.patches[P_CKL].value),
                         e1_ck[1].eq(e.patches[P_CKH].value)]
            for w in range(words):
                # Kept (as is ``sel``): the code is then one LUT behind them; left free,
                # the mapper spreads the cone over a chain of small LUTs (7 levels).
                hit_x = Signal(name=f"phit_x{w}", attrs={"keep": 1})
                hit_y = Signal(name=f"phit_y{w}", attrs={"keep": 1})
                m.d.comb += [
                    hit_x.eq(hits[P_L4C][w] | (hits[P_UDPL][w] if w % 2 else 0)),
                    hit_y.eq((hits[Y_OF_WORD[w]][w] if w in Y_OF_WORD else 0)
                             | hits[P_CKH if w % 2 else P_CKL][w]),
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
            py = e1_py[Y_OF_WORD[w]] if w in Y_OF_WORD else e1_ck[w % 2]
            src = [orig.r_data[lane], comp.r_data[lane], px[h:h + 8], py[h:h + 8]]
            c = e1_code[j]
            m.d.sync += e2.data[lane].eq(
                Mux(e1_zero[j], 0, Mux(c[1], Mux(c[0], src[3], src[2]),
                                       Mux(c[0], src[1], src[0]))))
        m.d.sync += [e2_v.eq(e1_v), e2.keep.eq(e1_keep),
                     e2.last.eq(e1_last), e2.user.eq(e1_user)]
        m.d.comb += [outq.w_en.eq(e2_v), outq.w_data.eq(e2)]
        if platform == "formal":
            # The room argument, proved (tests/formal): every beat issued is in E1, E2 or
            # outq until taken, so outq is never written full; the beat count of a
            # descriptor never wraps.
            m.d.comb += [
                Assert(~outq.w_en | outq.w_rdy, "egress: outq written while full"),
                Assert(occ == outq.level + e1_v + e2_v, "egress: occ is not the beats in flight"),
                Assert(~(e_active & ~e_drop) | (e_left != 0), "egress: beat count wraps"),
                Assert(~(e_active & ~e_drop) | (e_is_last == (e_left == 1)),
                       "egress: last flag out of step with the count"),
            ]

        # output: outq -> o
        o_beat = Signal(AxisBeat)
        m.d.comb += [
            o_beat.eq(outq.r_data),
            self.o.valid.eq(outq.r_rdy), self.o.payload.eq(o_beat), outq.r_en.eq(self.o.ready),
        ]
        with m.If(self.o.valid & self.o.ready & o_beat.last):
            m.d.sync += self.frames_out.eq(self.frames_out + 1)
        return m
