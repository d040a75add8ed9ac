"""BurstBuffer (paper Fig. 10): the compressed byte stream of one payload at a time in a
ring of 4 x 32-byte slots, written on the pieces' own lanes, with the position of the
next group kept for every ring position, so that the consumer's step (one group per
clock) is a select of registers.

Ports:
- ``i``: lane-aligned pieces ``{data 256, first 5, count 6, last 1}``: the piece's bytes
  sit on lanes ``first .. first+count-1`` of ``data`` (first + count <= 32), and the
  stream goes on at lane ``(first + count) mod 32`` of the next piece; a payload's first
  piece may start on any lane, every piece but the last runs to lane 31 (first + count
  = 32), ``last`` marks the final piece (``count`` may be 0, for an empty payload or an
  empty last piece after one that ran to lane 31). This is what the RX engine's feed
  delivers: a payload's first piece at lane (P + 4) mod 32, then whole beats.
  ``i.ready`` comes from registers only (never from ``i.valid``).
- ``allow``, ``past_ok`` (from the consumer's registers): the step goes (``go``) when
  ``allow`` and the group at the read position is held, or when ``past_ok`` (the
  consumer may read past what is held: the payload's last piece is in, or a final
  step that knows bytes are left over). A step moves the read position by the length
  that the tag word there gives (2..34; zeros past the end of a payload: 2).
- ``window`` (37 bytes: the longest group and a 3-byte tail): the bytes at the read
  position, registered on every clock with ``en`` high (the consumer's pipeline
  advance), so that it shows the group of a step that went on that clock.
- ``rest``: bytes written, from the read position (exactly the bytes left once
  ``last`` is up; negative past the end). ``moved``: the read position
  is set or reset this clock (a payload's first piece, or ``flush``).
- ``ready``: a payload's first piece is in; ``last``: its last piece is in (two clocks
  ago, so everything it brought is in the per-position registers).
- ``flush``: the consumer is done with this payload: the ring is emptied and, if the
  last piece is not in yet, pieces are dropped up to and including it. After a
  payload's last piece nothing is taken until ``flush``, so payloads never mix.

Zero extension (the wire format's rule for malformed payloads): a last piece writes
zeros on its slot's lanes past its end; a slot is cleared (bytes, and next positions
to "2 bytes on") the clock after the read position leaves it, and all on ``flush``.
So past the end of a payload every byte reads 0 and every group as a zero tag word (2 bytes).

Why this shape (timing, the 6-level budget): a byte-shifting buffer puts the
consumer's loop "length at byte 0 -> shift -> next length" in logic (11-12 levels,
docs/rx-burst-buffer.md). Here (6 levels):
- writes need no shifter and no aligner: a piece passes two registers, an input stage
  (first + count added in front of it) and a write stage, with the two lane
  thermometers and each lane's tag sizes looked up between them (so that none of it
  is behind the producer's logic, and the lane masks are flip-flops), and is written
  with byte enables per slot and lane;
- ``nx[a] = a + 2 + tw[a] + tw[a+1]`` (where the next group starts if one starts at
  a, with a wrap bit; ``tw``: the stored bytes of a byte's four tags) is written with
  the byte, from 31 lane adders shared by the four slots (lane b adds lane b+1's
  sizes, or 0 past the end of a last piece). Lane 31's successor is the next piece's
  lane 0 (non-last pieces run to lane 31), so lane 31 is written by the next piece,
  from its lane 0 and lane 31's sizes kept from before (``lastw``), or in a last
  piece with 0 after it. Stored lane-local (``_enc_q``): the slot bits of the sum
  are, per slot, one stored bit or its inverse, so the select tree takes them
  without an adder; the next read position is ``nx[P]``: three radix-4 select stages
  on P[5:0] and a pick by P[6], no adder (cheaper than summing all 128 positions
  every clock).
- "the group at P is held" must not wait for that select: ``go`` uses (1) slot flags
  only: the slot after P's is complete (its lane 31 written; also the one after it
  when P is on lane 31, as a group ends at most 33 bytes past P; a slot's flag is
  set the clock after its write, as its bytes are in the ring then and the group's
  tag word, which ``nx`` follows, is in an earlier slot, written earlier), which
  covers a stream arriving a beat a clock; (2) for a group whose end is in a slot
  still being filled (the first and last bytes of a payload, a slow input), the
  exact test on the selected ``nx[P]`` (the slot of its last byte complete),
  pipelined, used two clocks later if P stayed;
- the window is rotated out of the ring (by P[6:5], P[4:3], P[2:1], P[0]) into its
  register; the group's length, the errors and the field positions are the
  consumer's, from the window, in later pipeline stages;
- the write side's terms that do not follow P (a piece is held, pieces are taken,
  W's slot, the piece reaches lane 31, the payload not started, lane 31 gets its next
  position) are registers a clock ahead (``fill``, ``fresh``, ``t31``; their next
  values worked out for each value of room and of the consumer's flush apart, the two
  selecting), so that the
  slot-complete flags, lane 31's write and ``load`` are room and one LUT (the mapper
  spreads wider cones over chains of small LUTs where it sees slack); "P did not move" is kept as registers of ``go`` and of "P not set", so
  nothing waits for ``go`` and then more logic; the flag selects and the lane-31
  decode in front of ``go`` are kept nets, one LUT each;
- room for a piece compares slot numbers only (a piece on lane 0 opens a slot: P's
  slot must not be W's minus 4; three bits against a register kept beside W); the
  loop has no adder, and the little slot arithmetic near it (which slots P left) is
  gate logic, not carry chains (the mapper takes a carry chain's outputs as arriving
  at level 0 and lets the logic after it grow).

Why 128 bytes: a slot is written again the clock after the read position leaves it, and
steps need the slot after P's written, so four slots sustain 32 bytes a clock.
"""

from amaranth import *
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .primitives import rotate, select_tree
from .tag_decoder import tag_byte_bytes

__all__ = ["BurstBuffer", "PieceLayout", "WINDOW_BYTES", "RING_BYTES", "SLOT_BYTES"]

PieceLayout = data.StructLayout({"data": 256, "first": 5, "count": 6, "last": 1})

WINDOW_BYTES = 37
SLOT_BYTES = 32
SLOTS = 4
RING_BYTES = SLOT_BYTES * SLOTS


def _sub_bits(a, b, width):
    """(a - b) mod 2**width as gate logic (a ripple of XOR/AND/OR, which the mapper
    turns into LUTs as it likes), and a >= b (no borrow out): kept off carry chains,
    whose outputs the mapper would take as arriving at level 0."""
    bits = []
    borrow = C(0, 1)
    for k in range(width):
        x = a[k] if k < len(a) else C(0, 1)
        y = b[k] if k < len(b) else C(0, 1)
        bits.append(x ^ y ^ borrow)
        borrow = (~x & (y | borrow)) | (y & borrow)
    return Cat(*bits), ~borrow


def _enc_q(q):
    """A lane-local next position q (0..65: lane + 2 + the group's stored bytes) as
    stored per ring position: q's low 5 bits, its carry c = q >> 5 (0..2) into the slot
    bits as two bits, and c != 0."""
    if isinstance(q, int):
        c = q >> 5
        return (q & 31) | (c << 5) | (int(c != 0) << 7)
    return Cat(q[:5], q[5], q[6], q[5] | q[6])


def _next_of(nq, slot):
    """The next position, 8 bits with the wrap bit (32 * slot + q), from a stored value:
    the slot bits of slot + c are, for each slot, one stored bit or its inverse, so the
    select tree's LUTs take them without an adder in front."""
    lo, c5, c6, cnz = nq[:5], nq[5], nq[6], nq[7]
    hi = {0: (c5, c6, C(0, 1)), 1: (~c5, cnz, C(0, 1)),
          2: (c5, ~c6, c6), 3: (~c5, ~cnz, cnz)}[slot]
    return Cat(lo, *hi)


def _gate(m, expr, width, name):
    s = Signal(width, name=name)
    m.d.comb += s.eq(expr)
    return s


class BurstBuffer(wiring.Component):
    i: In(stream.Signature(PieceLayout))
    en: In(1)
    allow: In(1)
    past_ok: In(1)
    flush: In(1)
    window: Out(8 * WINDOW_BYTES)
    go: Out(1)
    moved: Out(1)
    rest: Out(signed(10))
    ready: Out(1)
    last: Out(1)

    def elaborate(self, platform):
        m = Module()
        N = RING_BYTES
        # Write stage (behind the input stage, below): it loads whenever it is empty or
        # its piece is used this clock (ready from registers only).
        piece = Signal(PieceLayout)
        pv = Signal()              # a piece is in the write stage
        inp = Signal(SLOT_BYTES)   # lanes the piece covers: first .. first+count-1
        zfl = Signal(SLOT_BYTES)   # lanes a last piece zero-fills (past its end)

        mem = [Signal(8, name=f"mem{a}") for a in range(N)]
        # Per position where the next group starts if one starts there, lane-local:
        # ``b + 2 + tw[a] + tw[a+1]`` (0..65) as its low 5 bits, the carry c (0..2) into
        # the slot bits as two bits, and c != 0 (see ``_next_of``).
        nq = [Signal(8, name=f"nq{a}", init=_enc_q(a % SLOT_BYTES + 2)) for a in range(N)]
        # Write and read positions, with two wrap bits: W - P is the bytes held
        # (0..128), negative once a step has read past the end of a payload.
        W = Signal(9)
        P = Signal(9)
        P1 = Signal(9)             # P a clock ago
        started = Signal()         # this payload's first piece is in
        got_last = Signal()        # ... its last piece
        last_d = Signal()          # ... and that was two clocks ago (lengths updated)
        discard = Signal()         # flushed before its last piece: drop pieces up to it
        m.d.sync += P1.eq(P)

        # ---- write side -----------------------------------------------------------
        # Room for a piece: one on lane 0 opens a slot, which must be free: W - P <= 96,
        # i.e. (W on lane 0, W - P <= 128) P's slot is not W's minus 4. W's slot (one-hot),
        # "W not on lane 0" and W's slot minus 4 are kept in registers beside W, so the
        # write enables are a compare of P with a register and an AND.
        ws_oh = Signal(SLOTS, init=1)
        wl_nz = Signal()
        w4 = Signal(4, init=(0 - 4) % 16)
        ok = Signal()              # taking pieces: not after the last, not dropping
        room = Signal(attrs={"keep": 1})
        # W - P <= 128, so the slot difference is 0..4: three bits tell 4 from the rest.
        m.d.comb += [ok.eq(~got_last & ~discard), room.eq(wl_nz | (P[5:8] != w4[:3]))]
        wr = Signal()
        take = Signal()            # the write stage takes the input stage's piece
        s1_v = Signal()            # a piece is in the input stage
        load = Signal()            # the payload's first piece: it sets the read position
        drop = Signal()
        # Registers a clock ahead (from the next values of pv, ok, started, ws_oh and
        # end), so that room is the only term of the write side's cones that is logic:
        # ``fresh`` = pv & ok & ~started (load = room & fresh) and ``fill[s]`` = pv & ok
        # & ws_oh[s] & (the piece reaches lane 31) (slot s completed = room & fill[s]).
        fresh = Signal()
        fill = Signal(SLOTS)
        # ``t31[s]`` = pv & ok & (a last piece reaching lane 31 in slot s, or a piece
        # into slot s + 1 once started): lane 31 of slot s gets its next position.
        t31 = Signal(SLOTS)
        m.d.comb += [
            take.eq(~pv | discard | (ok & room)),
            # The two stages move together (a bubble in the input stage is not filled
            # while the write stage waits): the ready is the write stage's, one LUT
            # behind room, as with a single input register.
            self.i.ready.eq(take),
            wr.eq(pv & ok & room),
            load.eq(room & fresh),
            drop.eq(pv & discard),
        ]
        # Two registers: the input stage (``s1_``) and the write stage, which both load
        # when the write stage's piece is written, dropped, or it is empty (``take``).
        # In between, a piece's tables:
        # its lanes (at or after first, before end = first + count: two thermometers;
        # the add is in front of the input stage) and each lane's tag sizes, so that
        # none of it is behind the producer's logic and the write stage's lane masks
        # and sizes are flip-flops.
        s1_piece = Signal(PieceLayout)
        s1_end = Signal(6)
        with m.If(self.i.ready):
            m.d.sync += [s1_v.eq(self.i.valid), s1_piece.eq(self.i.payload),
                         s1_end.eq(self.i.payload.first + self.i.payload.count)]
        end = Signal(6)
        lt = Signal(SLOT_BYTES)    # lane b before end
        ge = Signal(SLOT_BYTES)    # lane b at or after first
        lt_in = Signal(SLOT_BYTES)
        ge_in = Signal(SLOT_BYTES)
        with m.Switch(s1_end):
            for e in range(64):
                with m.Case(e):
                    m.d.comb += lt_in.eq((1 << min(e, SLOT_BYTES)) - 1)
        with m.Switch(s1_piece.first):
            for f in range(SLOT_BYTES):
                with m.Case(f):
                    m.d.comb += ge_in.eq(((1 << SLOT_BYTES) - 1) & ~((1 << f) - 1))
        twr = [Signal(5, name=f"twr{b}") for b in range(SLOT_BYTES)]
        tw_in = [tag_byte_bytes(m, s1_piece.data[8 * b:8 * b + 8], f"tw_in{b}")
                 for b in range(SLOT_BYTES)]
        with m.If(take):
            m.d.sync += [pv.eq(s1_v), piece.eq(s1_piece), end.eq(s1_end),
                         lt.eq(lt_in), ge.eq(ge_in)]
            m.d.sync += [twr[b].eq(tw_in[b]) for b in range(SLOT_BYTES)]
        m.d.comb += [inp.eq(ge & lt), zfl.eq(Mux(piece.last, ge & ~lt, 0))]
        lane = [piece.data[8 * b:8 * b + 8] for b in range(SLOT_BYTES)]

        # Lane adders, shared by the four slots: where the next group starts for a group
        # at lane b of this piece. Lanes 0..30 take lane b+1's tag sizes, or 0 past the
        # end of a last piece (its zero extension); a piece other than the last ends on
        # lane 31, whose successor is the next piece's lane 0: lane 31 is written by the
        # next piece (``q_bnd``, from ``lastw``, lane 31's sizes kept) or, in a last
        # piece, with 0 after it (``q_end``).
        q_lane = []
        for b in range(SLOT_BYTES - 1):
            q = Signal(7, name=f"q_in{b}")
            m.d.comb += q.eq(twr[b] + Mux(lt[b + 1], twr[b + 1], 0) + (b + 2))
            q_lane.append(q)
        lastw = Signal(5)
        q_end = Signal(7)
        q_bnd = Signal(7)
        m.d.comb += [q_end.eq(twr[31] + 33),
                     q_bnd.eq(lastw + Mux(lt[0], twr[0], 0) + 33)]

        # A slot is cleared (bytes and lengths) the clock after the read position
        # leaves it, and all of them on a flush: so slots past the end of a payload
        # read as zeros.
        moved = _gate(m, _sub_bits(P[5:7], P1[5:7], 2)[0], 2, "moved_sl")
        left = []
        for s in range(SLOTS):
            rel = _gate(m, _sub_bits(C(s, 2), P1[5:7], 2)[0], 2, f"rel{s}")
            left_s = Signal(name=f"left{s}")
            wrs = Signal(name=f"wrs{s}", attrs={"keep": 1})   # kept: a hint to the mapper
            m.d.comb += [
                left_s.eq(~_sub_bits(rel, moved, 2)[1]),
                wrs.eq(pv & ok & room & ws_oh[s]),
            ]
            left.append(left_s)
            # The clock after P left a slot, a piece may already open it again (room
            # follows P at once): so a slot that W is about to open is not cleared
            # while pieces still come; the payload's later pieces write all its lanes
            # from lane 0, or its last zero-fills them (from registers only).
            clr_s = Signal(name=f"clr{s}")
            m.d.comb += clr_s.eq(self.flush | (left_s & ~(ws_oh[s] & ok)))
            # Lane 31's next position is written by the next piece (which opens the
            # next slot on lane 0) once the payload has started, or, in a last piece
            # that covers it, with zeros after it: ``t31`` (registers a clock ahead,
            # like ``fill``) and room.
            w31 = Signal(name=f"w31_{s}")
            m.d.comb += w31.eq(room & t31[s])
            for b in range(SLOT_BYTES):
                a = SLOT_BYTES * s + b
                rst = Signal(name=f"rst{a}")
                we = Signal(name=f"we{a}")
                m.d.comb += [rst.eq(clr_s | (wrs & zfl[b])), we.eq(wrs & inp[b])]
                with m.If(rst):
                    m.d.sync += [mem[a].eq(0), nq[a].eq(_enc_q(b + 2))]
                with m.Else():
                    with m.If(we):
                        m.d.sync += mem[a].eq(lane[b])
                        if b < SLOT_BYTES - 1:
                            m.d.sync += nq[a].eq(_enc_q(q_lane[b]))
                    if b == SLOT_BYTES - 1:
                        with m.If(w31):
                            m.d.sync += nq[a].eq(Mux(ws_oh[s], _enc_q(q_end),
                                                     _enc_q(q_bnd)))

        # Slot complete: its lane 31 written (two clocks ago, as the lengths below);
        # cleared with the slot.
        cf0 = Signal(SLOTS)
        cf = Signal(SLOTS)
        for s_ in range(SLOTS):
            with m.If(self.flush):
                m.d.sync += [cf0[s_].eq(0), cf[s_].eq(0)]
            with m.Else():
                m.d.sync += [
                    cf0[s_].eq((cf0[s_] & ~left[s_]) | (room & fill[s_])),
                    cf[s_].eq(cf0[s_] & ~left[s_]),
                ]

        # ---- per position: where the next group starts (with a wrap bit), recomputed
        # every clock; the bytes of the last clock's write are not in it yet ----------
        nx = [_next_of(nq[a], a // SLOT_BYTES) for a in range(N)]

        # ---- the step loop ----------------------------------------------------------
        # P -> three select stages on P[5:0] (two candidates) -> is the slot of the
        # group's last byte complete -> pick by P[6] -> go / next P.
        n_lo, n_hi = select_tree(m, nx, P[:6], "nsel", stop=2)

        def held(n, cfs, name):
            # The group's last byte (n - 1) lies in a complete slot: the slots before it
            # are then complete too (slots fill in ring order).
            z = Signal(name=f"{name}_z")
            es = Signal(2, name=f"{name}_s")
            f = Signal(name=name)
            m.d.comb += [z.eq(n[:5] == 0), es.eq(Cat(n[5] ^ z, n[6] ^ (z & ~n[5]))),
                         f.eq(cfs.bit_select(es, 1))]
            return f

        # Whether the group at P is held, two ways, so that no select is in front of
        # ``go``: (1) from registers only: the slot after P's is complete (and the one
        # after that, when P is on lane 31: a group reaches at most 33 bytes past P);
        # (2) exactly, from the selected next position: registered, then the slot of
        # the group's last byte looked up, registered: right two clocks later if P did
        # not move in between (a slot never becomes incomplete while P stays in front
        # of it).
        ps = P[5:7]
        # A group's end may use the slot flags of the last clock's writes (``cf0``): its
        # bytes are in the ring, and its tag word (which ``nx`` follows) is older, as
        # it lies in an earlier slot; except on lane 31, where the tag word's second
        # byte is in the next slot (``cf``, as old as ``nx``).
        # Kept (each one LUT of registers), as is ``fits``: so that the mapper does not
        # spread the lane-31 decode and the flag selects over a chain of small LUTs in
        # front of the consumer's own logic on the loop.
        c1 = Signal(attrs={"keep": 1})
        c1_old = Signal(attrs={"keep": 1})
        c2 = Signal(attrs={"keep": 1})
        p31 = Signal(attrs={"keep": 1})
        m.d.comb += [
            p31.eq(P[:5] == 31),
            c1.eq(cf0.bit_select((ps + 1)[:2], 1)),
            c1_old.eq(cf.bit_select((ps + 1)[:2], 1)),
            c2.eq(cf0.bit_select((ps + 2)[:2], 1)),
        ]
        coarse = Signal()
        m.d.comb += coarse.eq(Mux(p31, c1_old & c2, c1))
        nr = Signal(8)
        cf_d = Signal(SLOTS)       # cf as of the clock of nx's value in nr
        # P did not move on the last clock: ``still = stay_r & ~go_r``, from a register of
        # ``go`` and one of "P not set" (load, flush), so that no register's input waits
        # for ``go`` and then more logic. The exact test, ANDed with "P did not move on
        # the clock of the select nor on the one after it", is registered as a whole
        # (``exact_r``); only "nor on the last clock" (``~go_r``) is applied after it.
        go_r = Signal()
        stay = Signal()
        stay_r = Signal()
        still = Signal()
        exact_r = Signal()
        m.d.comb += [stay.eq(~(load | self.flush)), still.eq(stay_r & ~go_r)]
        m.d.sync += [
            nr.eq(Mux(P[6], n_hi, n_lo)),
            cf_d.eq(cf),
            go_r.eq(self.go),
            stay_r.eq(stay),
            exact_r.eq(held(nr, cf_d, "fit") & stay & still),
        ]
        fits = Signal(attrs={"keep": 1})
        m.d.comb += [
            fits.eq(coarse | (exact_r & ~go_r)),
            self.go.eq((self.allow & fits) | self.past_ok),
            self.moved.eq(load | self.flush),
        ]
        nxt = Signal(8)
        m.d.comb += nxt.eq(Mux(P[6], n_hi, n_lo))
        with m.If(self.flush):
            m.d.sync += P.eq(0)
        with m.Elif(load):
            m.d.sync += P.eq(piece.first)
        with m.Elif(self.go):
            # nxt[7]: the next group starts past the end of the ring (P wraps).
            m.d.sync += P.eq(Cat(nxt[:7], P[7] ^ nxt[7], P[8] ^ (P[7] & nxt[7])))
        rest9 = Signal(signed(9))  # modulo 512 (the positions' width), signed
        m.d.comb += [
            rest9.eq(W - P),
            self.rest.eq(rest9),
            self.ready.eq(started),
            self.last.eq(last_d),
        ]

        # ---- the window: rotated out of the ring at P ---------------------------------
        rot = rotate(m, mem, P[:7], WINDOW_BYTES, "rot")
        with m.If(self.en):
            m.d.sync += self.window.eq(Cat(*rot))

        # ---- payload state ------------------------------------------------------------
        w_next = Signal(9)
        m.d.comb += w_next.eq(Cat(piece.first, W[5:]) + piece.count)
        # Next values of the registers that ``fresh``, ``fill`` and ``t31`` are made of
        # (as the assignments below and above give them), worked out for each value of
        # room and of flush apart (kept), so that these two, the late terms (flush comes
        # from the consumer's step logic), are a final select.
        w_dec = Cat(*[w_next[5:7] == k for k in range(SLOTS)])
        ends = drop & piece.last

        def ahead(rm, fl):
            ready = ~pv | discard | (ok & rm)
            wr_ = pv & ok & rm
            pv_n = Mux(ready, s1_v, pv)
            end31_n = Mux(ready, s1_end[5], end[5])
            last_n = Mux(ready, s1_piece.last, piece.last)
            if fl:
                started_n = C(0, 1)
                discard_n = Mux(discard, ~ends, ~got_last & ~(wr_ & piece.last))
                ws_n = C(1, SLOTS)
                ok_n = ~discard_n
            else:
                started_n = started | wr_
                discard_n = discard & ~ends
                ws_n = Mux(wr_, w_dec, ws_oh)
                ok_n = ~(got_last | (wr_ & piece.last)) & ~discard_n
            live = pv_n & ok_n
            v = Signal(1 + 2 * SLOTS, name=f"ahead{rm}{fl}", attrs={"keep": 1})
            m.d.comb += v.eq(Cat(
                live & ~started_n,
                Mux(live & end31_n, ws_n, 0),
                Mux(live, Mux(last_n & end31_n, ws_n, 0)
                    | Mux(started_n, Cat(ws_n[1:], ws_n[0]), 0), 0)))
            return v

        nv = Mux(self.flush, Mux(room, ahead(1, 1), ahead(0, 1)),
                 Mux(room, ahead(1, 0), ahead(0, 0)))
        m.d.sync += [fresh.eq(nv[0]), fill.eq(nv[1:1 + SLOTS]), t31.eq(nv[1 + SLOTS:])]
        with m.If(self.flush):
            m.d.sync += [W.eq(0), started.eq(0), got_last.eq(0), last_d.eq(0),
                         ws_oh.eq(1), wl_nz.eq(0), w4.eq((0 - 4) % 16)]
            # The rest of the payload is still on its way: drop it when it comes.
            with m.If(discard):
                m.d.sync += discard.eq(~(drop & piece.last))
            with m.Else():
                m.d.sync += discard.eq(~got_last & ~(wr & piece.last))
        with m.Else():
            with m.If(wr):
                # The piece's lanes end at first + count: W's lane is its first.
                m.d.sync += [
                    W.eq(w_next), started.eq(1), lastw.eq(twr[SLOT_BYTES - 1]),
                    wl_nz.eq(w_next[:5] != 0),
                    w4.eq(w_next[5:] + 12),
                    ws_oh.eq(Cat(*[w_next[5:7] == k for k in range(SLOTS)])),
                ]
                with m.If(piece.last):
                    m.d.sync += got_last.eq(1)
            m.d.sync += last_d.eq(got_last)
            with m.If(drop & piece.last):
                m.d.sync += discard.eq(0)
        return m
