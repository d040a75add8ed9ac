"""The hook's decision between the coded ring, the process group's own all-reduce, its
fp16 all-reduce and a mix of them per bucket (drivers/collectives/decide.py), in two
spawned ranks over gloo: every outcome, taken by both ranks from the slowest rank's
times (each rank alone would have chosen otherwise); the error-feedback memory exact
across the switches (zero after a plain all-reduce, fp16's rounding not kept, conserved
over the steps); the group's collectives in the same order on both ranks with buckets on
different paths, probes and agreements between (hook_direct.py); decide="allreduce"
giving gloo's numbers bit for bit; the decisions in the state_dict and back; and
bfloat16 and float16 buckets through the paths. Without ranks: the schedule."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

DTYPES = (("bfloat16", "ring"), ("float16", "ring"), ("bfloat16", "allreduce"))
STEPS = 14      # 2 steps of start, 9 probes, then the first decision (step 11)
# Times each rank "measures" (seconds per step and per exchange, by path), replacing the
# real ones: rank 0 alone would choose another path than the slowest rank's times give.
FAKE = {"ring-wins": ({"ring": 0.2, "allreduce": 0.25, "fp16": 0.15},
                      {"ring": 0.1, "allreduce": 0.3, "fp16": 0.3}),
        "allreduce-wins": ({"ring": 0.1, "allreduce": 0.2, "fp16": 0.3},
                           {"ring": 1.0, "allreduce": 0.5, "fp16": 0.6}),
        "fp16-wins": ({"ring": 0.1, "allreduce": 0.4, "fp16": 0.3},
                      {"ring": 1.0, "allreduce": 0.5, "fp16": 0.35})}
PATHS = ("ring", "allreduce", "fp16")
# Buckets on different paths: the bucket holding the 64 x 64 weight codes (its ring
# 1.25x faster), the others all-reduce (2x), and the mix's steps the fastest, with the
# hold shortened (decide.HOLD_MAX 8: held 8 steps, then two probe steps of each path) and
# small buckets: tried at steps 11-12, taken at 13, each path probed at 15-20, agreed
# again at 21 (next at 29; its probes from step 23).
MIXED_STEPS = 23
MIXED = ({"ring": 0.4, "allreduce": 0.5, "fp16": 0.6}, {"ring": 0.5, "allreduce": 0.25,
                                                        "fp16": 0.6})
MIXED_STEP = {"ring": 0.5, "allreduce": 0.4, "fp16": 0.6, "mix": 0.3}


def _net():
    from torch import nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 2))


def _steps(rank, state, steps=STEPS, dtype=torch.float32, cap_mb=25.0):
    """`steps` steps of DDP over _net() with `state`'s hook (None: gloo's all-reduce);
    per step the path taken, the residual's norm, the rank's own gradient and what
    DDP delivered."""
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import inc_allreduce_hook
    net = DDP(_net().to(dtype), bucket_cap_mb=cap_mb)
    params = list(net.parameters())
    if state is not None:
        net.register_comm_hook(state, inc_allreduce_hook)
    g = torch.Generator().manual_seed(rank)
    rows = []
    for _ in range(steps):
        x = torch.randn(32, 30, generator=g).to(dtype)
        y = (x[:, 0] > 0).long()
        mine = torch.autograd.grad(nn.functional.cross_entropy(net.module(x), y), params)
        for p in params:
            p.grad = None
        before = _taken(state)
        nn.functional.cross_entropy(net(x), y).backward()
        after = _taken(state)
        rows.append({"path": [p for p in after if after[p] > before[p]],
                     "resid": state.memory.norm() if state is not None and state.memory
                     else None,
                     "mine": torch.cat([t.flatten() for t in mine]).double().numpy(),
                     "got": torch.cat([p.grad.flatten() for p in params]).double().numpy()})
    if state is not None and state.memory is not None:
        rows[-1]["resid_vec"] = state.memory.gather(state.worker.keys.of(params))
    return rows


def _taken(state):
    out = {p: 0 for p in PATHS}
    for d in (state.decisions if state is not None else []):
        for p, n in d["taken"].items():
            out[p] += n
    return out


def _decide(rank, world):
    from inceptionn.ddp_hook import IncState
    out = {}
    for name, fake in FAKE.items():
        state = IncState(timeout_s=20)
        _fake(state, lambda key, f=fake[rank]: f, {**fake[rank], "mix": 9.0})
        try:
            rows = _steps(rank, state)
            out[name] = {"paths": [r["path"] for r in rows], "got": rows[-1]["got"],
                         "decisions": state.decisions, "schedule": state.schedule}
        finally:
            state.close()
    out["mixed"] = _mixed(rank)
    out["slow_snapshot"] = _slow_snapshot()
    state = IncState(timeout_s=20)            # as measured: the memory across the switches
    try:
        rows = _steps(rank, state)
        sd = state.state_dict()
        out["measured"] = {"rows": rows, "decisions": state.decisions,
                           "sd": {"decisions": sd["decisions"]}}   # no tensors: they pickle as fds
        again = IncState(timeout_s=20)
        try:
            again.load_state_dict(sd)
            out["measured"]["reloaded"] = again.state_dict()["decisions"]
        finally:
            again.close()
    finally:
        state.close()
    for dtype, decide in DTYPES:    # 16-bit buckets (widened and narrowed whatever the path)
        state = IncState(timeout_s=20, decide=decide)
        try:
            rows = _steps(rank, state, steps=2, dtype=getattr(torch, dtype))
            out[f"{dtype}/{decide}"] = {"mine": sum(r["mine"] for r in rows),
                                        "got": sum(r["got"] for r in rows),
                                        "resid": rows[-1]["resid_vec"]}
        except Exception as e:  # reported to the test
            out[f"{dtype}/{decide}"] = f"{type(e).__name__}: {e}"
        finally:
            state.close()
    for name, kw in (("gloo", None), ("forced", {"decide": "allreduce"})):
        state = None if kw is None else IncState(timeout_s=20, **kw)
        try:
            out[name] = [r["got"] for r in _steps(rank, state, steps=3)]
        finally:
            if state is not None:
                state.close()
    return out


def _fake(state, bucket_times, step_times):
    """The hook's measured times replaced: per exchange `bucket_times(key)[path]`, per
    step `step_times[config]`."""
    d = state.worker.decisions
    real, real_step = d.record, d.record_step
    d.record = lambda key, path, s: real(key, path, bucket_times(key)[path])
    d.record_step = lambda config, s: real_step(config, step_times[config])


def _mixed(rank):
    from inceptionn.ddp_hook import IncState
    from inceptionn.drivers.collectives import decide
    decide.HOLD_STEPS, decide.HOLD_MAX = 4, 8     # the probes' share would hold 200
    state = IncState(timeout_s=20)
    _fake(state, lambda key: {p: t * (1 + rank) for p, t in
                              MIXED[0 if any(n == 64 * 64 for _, n in key) else 1].items()},
          MIXED_STEP)
    try:
        rows = _steps(rank, state, steps=MIXED_STEPS, cap_mb=0.01)
        return {"paths": [r["path"] for r in rows], "got": [r["got"] for r in rows],
                "decisions": state.decisions, "direct": state.worker.direct_calls,
                "calls": state.calls, "schedule": state.schedule}
    finally:
        state.close()


SLOW = 0.25     # seconds the snapshot is made to take


def _slow_snapshot():
    """The hook's snapshot slowed by SLOW: the coded path's time includes it (decide.py)."""
    import time
    from inceptionn.ddp_hook import IncState
    state = IncState(timeout_s=20)
    real = state.worker.snapshot

    def slow(*args, **kw):
        time.sleep(SLOW)
        return real(*args, **kw)
    state.worker.snapshot = slow
    try:
        # the probes (the first of each path warm-up), then the decision, as measured
        _steps(0, state, steps=STEPS)
        return state.decisions, state.schedule
    finally:
        state.close()


@pytest.fixture(scope="module")
def decided():
    res = spawn(_decide, 2, timeout=180)
    outs = [res[r][0] for r in (0, 1)]
    assert all(isinstance(o, dict) for o in outs), outs
    return outs


@pytest.mark.parametrize("name,path", [("ring-wins", "ring"), ("allreduce-wins", "allreduce"),
                                       ("fp16-wins", "fp16")])
def test_both_ranks_take_the_path_the_slowest_ranks_times_give(decided, name, path):
    a, b = decided[0][name], decided[1][name]
    # DDP's start (its first step, its bucket before the rebuild) on the ring, then the
    # probes, three steps of each path.
    assert a["paths"] == b["paths"], (a["paths"], b["paths"])
    assert a["paths"][:11] == [["ring"]] * 2 + [[p] for p in PATHS for _ in range(3)], \
        a["paths"]
    assert a["paths"][11:] == [[path]] * (STEPS - 11), a["paths"]
    decided_now = [d for d in a["decisions"] if d["agreed"]]
    assert len(decided_now) == 1 and decided_now[0]["path"] == path, a["decisions"]
    slowest = {p: max(FAKE[name][r][p] for r in (0, 1)) for p in PATHS}
    assert decided_now[0]["agreed"] == slowest
    # one bucket: the mix is no candidate (never timed: infinitely slow)
    assert a["schedule"]["agreed"] == {**slowest, "mix": float("inf")}
    assert a["schedule"]["config"] == b["schedule"]["config"] == path
    assert [d["path"] for d in b["decisions"] if d["agreed"]] == [path]
    assert np.array_equal(a["got"], b["got"])              # the ranks' gradients identical


def test_memory_is_exact_across_the_switches(decided):
    rows = [decided[r]["measured"]["rows"] for r in (0, 1)]
    paths = [r["path"] for r in rows[0]]
    assert paths == [r["path"] for r in rows[1]]
    assert all([p] in paths[1:] for p in PATHS), paths
    for step, path in enumerate(paths):
        for r in (0, 1):      # the plain paths keep no residual (fp16.py: why not fp16's)
            assert (rows[r][step]["resid"] == 0) == (path != ["ring"]), (step, r, path)
    # What DDP delivered over the steps plus the ranks' mean residual is the sum of the
    # true mean gradients: the residual added in before a plain all-reduce reaches the
    # model, and none is lost or counted twice at a switch. Up to the fp16 steps'
    # roundings, not kept: each rank's value (its gradient plus the residual added in)
    # to float16, half an fp16 ulp of it, and the group's float16 sum, half an ulp of
    # the mean (at P = 2 the mean is that sum itself).
    true = sum((rows[0][s]["mine"] + rows[1][s]["mine"]) / 2 for s in range(STEPS))
    got = sum(rows[0][s]["got"] for s in range(STEPS))
    assert np.array_equal(got, sum(rows[1][s]["got"] for s in range(STEPS)))
    resid = (rows[0][-1]["resid_vec"] + rows[1][-1]["resid_vec"]) / 2
    sums = sum(np.linalg.norm((np.abs(rows[0][s]["got"])
                               + (np.abs(rows[0][s]["mine"]) + np.abs(rows[1][s]["mine"])) / 2)
                              * 2.0 ** -11 + 2.0 ** -24)
               + 2.0 ** -11 * (rows[0][s - 1]["resid"] + rows[1][s - 1]["resid"]) / 2
               for s, p in enumerate(paths) if p == ["fp16"])
    off = (np.linalg.norm(got + resid - true) - sums) / np.linalg.norm(true)
    ring_step = max(s for s, p in enumerate(paths) if p == ["ring"])
    kept = rows[0][ring_step]["resid"] / np.linalg.norm(true)
    print(f"paths {paths}; (|delivered + residual - true| - fp16 sums' bound) / |true| = "
          f"{off:.2e} (bound {sums / np.linalg.norm(true):.2e}); the residual after the "
          f"last ring step, relative: {kept:.2e}")
    assert off < 1e-6, off
    assert kept > 20 * max(sums / np.linalg.norm(true), 1e-7), (kept, sums)   # it would show


def test_buckets_on_different_paths_keep_the_groups_order(decided):
    """Some buckets coded, some all-reduced from the hook's call, their agreements at
    different steps: the ranks' collectives never cross (a crossing hangs or sums
    unrelated tensors: the gradients would differ or the run time out)."""
    a, b = decided[0]["mixed"], decided[1]["mixed"]
    assert a["paths"] == b["paths"], (a["paths"], b["paths"])
    for x, y in zip(a["got"], b["got"]):
        assert np.array_equal(x, y)
    assert sorted(a["paths"][-1]) == ["allreduce", "ring"], a["paths"]
    assert a["schedule"]["config"] == "mix" and a["schedule"]["decide_at"] == 29, a["schedule"]
    # the trial, then the mix, then a probe of each path, whole steps
    assert [sorted(p) for p in a["paths"][11:21]] == [["allreduce", "ring"]] * 4 + [
        ["ring"], ["ring"], ["allreduce"], ["allreduce"], ["fp16"], ["fp16"]], a["paths"]
    assert len(a["decisions"]) >= 3, a["decisions"]
    # the plain buckets went from the hook's call, but not all (the agreements did not)
    assert 0 < a["direct"] == b["direct"] < a["calls"], (a["direct"], a["calls"])


@pytest.mark.parametrize("dtype,decide", DTYPES)
def test_16_bit_buckets_are_averaged_on_either_path(decided, dtype, decide):
    a, b = (decided[r][f"{dtype}/{decide}"] for r in (0, 1))
    assert isinstance(a, dict) and isinstance(b, dict), (a, b)
    assert np.array_equal(a["got"], b["got"])
    # Two steps: delivered plus the ranks' mean residual (the codec's loss, fed back:
    # none on the plain path) is the sum of the true mean gradients, up to the narrowing
    # of each step's average to the bucket's dtype (half an ulp a value, not fed back).
    true = (a["mine"] + b["mine"]) / 2
    resid = (a["resid"] + b["resid"]) / 2
    off = np.linalg.norm(a["got"] + resid - true) / np.linalg.norm(true)
    eps = float(torch.finfo(getattr(torch, dtype)).eps)
    print(f"{dtype} / {decide}: |delivered + residual - true| / |true| = {off:.2e} "
          f"(eps {eps:.1e}); residual {np.linalg.norm(resid) / np.linalg.norm(true):.2e}")
    assert off < 2 * eps, off
    assert (np.linalg.norm(resid) > 0) == (decide == "ring")


def test_the_coded_paths_time_includes_the_hooks_snapshot(decided):
    """Real times: the snapshot made slow shows in the ring's exchange time and in its
    steps (the step clock), and the ranks leave the ring."""
    for r in (0, 1):
        decisions, schedule = decided[r]["slow_snapshot"]
        (d,) = [d for d in decisions if d["taken"]["ring"] >= 2]
        # the plain paths go from the hook's call (no snapshot): they take no SLOW
        assert d["seconds"]["ring"] >= SLOW > max(d["seconds"]["allreduce"],
                                                  d["seconds"]["fp16"]), d
        steps = schedule["seconds"]
        assert steps["ring"] >= SLOW > max(steps["allreduce"], steps["fp16"]), schedule
        assert schedule["config"] != "ring" and schedule["agreed"]["ring"] >= SLOW


def test_the_decisions_are_in_the_state_and_come_back(decided):
    m = decided[0]["measured"]
    saved = m["sd"]["decisions"]
    assert saved["buckets"] and repr(saved) == repr(m["reloaded"])      # repr: nan == nan
    assert saved["steps"]["step"] == STEPS - 1 and saved["last"]
    assert {d["calls"] for d in saved["buckets"]} == {d["calls"] for d in m["decisions"]}
    for d in m["decisions"]:
        assert set(d["seconds"]) == set(PATHS)
        assert sum(d["taken"].values()) == d["calls"]


def test_decide_allreduce_gives_gloos_gradients_bit_for_bit(decided):
    for r in (0, 1):
        for got, want in zip(decided[r]["forced"], decided[r]["gloo"]):
            assert np.array_equal(got, want)


# ---------------------------------------------------------------- without ranks


def test_decide_defaults_and_refusals():
    from inceptionn.ddp_hook import IncState
    made = [IncState(), IncState(wire="emulate"), IncState(method="topk", density=0.1),
            IncState(transport="torch"), IncState(method="none", decide="allreduce")]
    try:
        assert [s.decide for s in made] == ["auto", "ring", "ring", "auto", "allreduce"]
        assert made[0].settings()["decide"] == "auto"       # compared between ranks
    finally:
        for s in made:
            s.close()
    with pytest.raises(ValueError, match="decide must be one of"):
        IncState(decide="sometimes")
    for kw in ({"wire": "nic"}, {"method": "topk", "density": 0.1}, {"wire": "emulate"}):
        with pytest.raises(ValueError, match="needs method 'inceptionn' or 'none'"):
            IncState(decide="auto", **kw)


def _run(d, steps, buckets, step_times, bucket_times, agree=lambda v: v):
    """`steps` steps of `buckets` (keys) through Decisions `d` without ranks: per step,
    each bucket's path (begin, path, record as the hook does), the step's time faked."""
    taken = []
    for _ in range(steps):
        row = []
        for i, key in enumerate(buckets):
            d.begin(key, i)
            p = d.path(key, agree)
            row.append(p)
            d.record(key, p, bucket_times[key][p])
        taken.append(row)
        # the step just run: its time, as begin() would measure it
        running = d._running
        d._mark = None          # begin() times nothing: the time is faked here
        d.record_step(running, step_times[running])
    return taken


A, B = ((0, 10), (1, 5)), ((2, 7),)


def test_the_schedule_probes_agrees_holds_and_probes_again():
    from inceptionn.drivers.collectives.decide import Decisions
    d = Decisions("auto")
    agreed = []

    def agree(values):              # the other rank is slower on all-reduce steps
        agreed.append(list(values))
        return [values[0], max(values[1], 3.0)] + list(values[2:])

    same = {"ring": 1.0, "allreduce": 2.0, "fp16": 4.0}
    steps = {"ring": 2.5, "allreduce": 2.0, "fp16": 4.0, "mix": 9.0}
    n = 11 + 160 + 10
    taken = _run(d, n, [A, B], steps, {A: same, B: same}, agree)
    assert taken[:11] == [["ring"] * 2] * 2 + [[p, p] for p in PATHS for _ in range(3)]
    # Agreed at step 11: every bucket's fastest is the ring (no mix), and by steps the
    # ring 2.5 against all-reduce 3.0 (the other rank's) and fp16 4.0: the ring, held
    # until the probes' extra (two steps each: 2 x (0.5 + 1.5)) is 1% of the steps:
    # 4.0 / 2.5 / 0.01 = 160 steps; the four steps before the next decision probe the
    # others, two each.
    assert len(agreed[0]) == 4 + 2 * 3 and agreed[0][:3] == [2.5, 2.0, 4.0]
    assert agreed[0][3] == float("inf")          # the mix: never timed
    hold = 160
    assert taken[11:11 + hold - 4] == [["ring", "ring"]] * (hold - 4)
    assert taken[11 + hold - 4:11 + hold] == [["allreduce"] * 2] * 2 + [["fp16"] * 2] * 2
    assert len(agreed) == 2 and d.steps.decide_at > 11 + hold
    sched = d.steps
    assert sched.config == "ring" and sched.agreed["allreduce"] == 3.0
    rep = {tuple(r["params"]): r for r in d.report()}
    assert rep[(0, 1)]["values"] == 15 and rep[(0, 1)]["path"] == "ring"
    assert rep[(0, 1)]["fastest"] == "ring" and rep[(0, 1)]["agreed"] == same
    assert sum(rep[(2,)]["taken"].values()) == rep[(2,)]["calls"] == n
    # The state comes back as it was (the schedule included)
    again = Decisions("auto")
    again.load(d.state(), [10, 5, 7])
    assert again.report() == d.report() and again.steps == d.steps
    assert again._last == {A, B}
    assert Decisions("ring").path(A, agree) == "ring"


def test_a_mix_is_tried_then_taken_only_where_its_steps_are_faster():
    from inceptionn.drivers.collectives.decide import TRIAL, Decisions
    # bucket A codes faster, B all-reduces faster: the mix puts A on the ring, B on gloo
    times = {A: {"ring": 1.0, "allreduce": 2.0, "fp16": 3.0},
             B: {"ring": 2.0, "allreduce": 1.0, "fp16": 3.0}}
    for mix_step, want in ((1.0, "mix"), (3.0, "allreduce")):
        d = Decisions("auto")
        steps = {"ring": 2.5, "allreduce": 2.0, "fp16": 4.0, "mix": mix_step}
        taken = _run(d, 11 + TRIAL + 3, [A, B], steps, times)
        assert taken[11:11 + TRIAL] == [["ring", "allreduce"]] * TRIAL      # the trial
        assert d.steps.config == want and not d.steps.trial
        got = ["ring", "allreduce"] if want == "mix" else ["allreduce"] * 2
        assert taken[11 + TRIAL:] == [got] * 3
        assert {r["fastest"] for r in d.report()} == {"ring", "allreduce"}
        assert [r["path"] for r in d.report()] == got
    # a state saved before the schedule went by steps (a list of buckets) keeps their
    # times and probes afresh
    old = d.state()["buckets"]
    for c in old:
        del c["seconds"]["fp16"], c["taken"]["fp16"]
    again = Decisions("auto")
    again.load(old, [10, 5, 7])
    assert again.steps.step == -1 and np.isnan(again.by_bucket[A].seconds["fp16"])
    with pytest.raises(ValueError, match="schedule is damaged"):
        again.load({**d.state(), "steps": {**d.state()["steps"], "config": "never"}},
                   [10, 5, 7])


@pytest.mark.parametrize("world", [2, 3, 4])
def test_fp16_keeps_its_own_rounding_exactly(world):
    from inceptionn.drivers.collectives.fp16 import half_scale, round_half, widen_sum
    rng = np.random.default_rng(world)
    x = np.concatenate([rng.standard_normal(4000).astype(np.float32) * 10.0 ** e
                        for e in (-9, -6, -3, 0, 3)] + [np.float32([1e-40, 7e4, -1e5])])
    loss = np.empty_like(x)
    h = round_half(torch.from_numpy(x), world, loss)
    s = half_scale(world)
    assert 2 ** s >= world > 2 ** (s - 1) and h.dtype == torch.float16
    back = h.double().numpy() * 2.0 ** s
    # x = what is sent + the residual, exactly (within twice float16's range)
    assert np.array_equal(back + loss.astype(np.float64), x.astype(np.float64))
    assert np.abs(h.float().numpy()).max() <= 65504 and np.any(loss != 0)
    # P ranks' rounded values summed cannot overflow float16
    assert np.isfinite((h.float() * world).half().float().numpy()).all()
    assert np.array_equal(widen_sum(h, world).numpy(), (back / world).astype(np.float32))
    nan = np.float32([np.nan, np.inf, 1.0])
    out = np.empty_like(nan)
    round_half(torch.from_numpy(nan), world, out)
    assert np.array_equal(out, [0, 0, 0])


def test_the_schedule_of_three_paths():
    from inceptionn.drivers.collectives.decide import Decisions
    d = Decisions("auto")
    same = {"ring": 3.0, "allreduce": 2.0, "fp16": 1.0}
    steps = {"ring": 3.0, "allreduce": 2.0, "fp16": 1.0, "mix": 5.0}
    taken = _run(d, 11 + 60, [A], steps, {A: same})
    assert [t[0] for t in taken[:11]] == ["ring"] * 5 + ["allreduce"] * 3 + ["fp16"] * 3
    # fp16 wins, held until the probes' extra (2 x (1.0 + 2.0)) is 1% of the steps: 600
    assert [t[0] for t in taken[11:]] == ["fp16"] * 60
    s = d.steps
    assert s.decide_at == 611 and s.agreed == {**steps, "mix": float("inf")}
    _run(d, s.decide_at - 4 - (s.step + 1), [A], steps, {A: same})
    # the probes: each other config twice, in order, just before the next decision; the
    # first of each a warm-up, its time not counted (a real clock this time)
    seen = []
    for want, warm in (("ring", True), ("ring", False), ("allreduce", True),
                       ("allreduce", False)):
        d.begin(A, 0)
        assert [d.peek(A), d.path(A, None), d._warm] == [want, want, warm]
        _fake_clock(d, {"ring": 30.0, "allreduce": 20.0}[want] * (1 + warm))
        seen.append(dict(d.steps.seconds))
    d.begin(A, 0)
    assert d.peek(A) is None and d.peek(B) is None      # every bucket of the step that agrees
    # the warm-up steps (twice as slow) were counted as taken, not timed
    assert 29.0 < d.steps.seconds["ring"] < 31.0 and 19.0 < d.steps.seconds["allreduce"] < 21.0
    assert seen[1]["ring"] == 3.0 and seen[2]["ring"] > 29.0, seen
    # a tie goes to the exact path first
    tie = Decisions("auto")
    flat = {"ring": 1.0, "allreduce": 1.0, "fp16": 1.0, "mix": 1.0}
    _run(tie, 12, [A], flat, {A: flat})
    assert tie.steps.config == "allreduce"
    # ... and so does a near tie: another config is taken only MARGIN faster
    from inceptionn.drivers.collectives.decide import MARGIN
    for fp16, want in ((1.0 / (1 + MARGIN) + 0.002, "allreduce"), (1.0 / (1 + MARGIN) - 0.002, "fp16")):
        near = Decisions("auto")
        times = {"ring": 2.0, "allreduce": 1.0, "fp16": fp16, "mix": 2.0}
        _run(near, 12, [A], times, {A: times})
        assert near.steps.config == want, fp16
    assert Decisions("fp16").peek(A) == "fp16"
    # without a bucket index, a bucket handed again begins the next step
    k = Decisions("auto")
    for key in (A, B, A, B, A):
        k.begin(key)
    assert k.steps.step == 2


def _fake_clock(d, seconds):
    """The step under way took `seconds`, as the next begin() measures it: from the end
    of the last step's exchanges to the end of this one's."""
    import time
    d._end = time.perf_counter()
    d._mark = d._end - seconds


def test_the_probes_estimate_is_their_fastest():
    from inceptionn.drivers.collectives.decide import PROBED, Decisions
    d = Decisions("auto")
    # DDP's start (2 ring steps) and each path's warm-up are dropped; of the two probes
    # after it the fastest counts (a load spike slows one)
    samples = {"ring": [9.0, 9.0, 9.0, 3.0, 5.0], "allreduce": [9.0, 2.0, 1.5],
               "fp16": [9.0, 4.0, 6.0]}
    seen = dict.fromkeys(samples, 0)
    for _ in range(PROBED):
        d.begin(A, 0)
        p = d.path(A, None)
        v = samples[p][seen[p]]
        seen[p] += 1
        d.record(A, p, v)
        _fake_clock(d, v + 1)
    assert seen == {"ring": 5, "allreduce": 3, "fp16": 3}
    d.begin(A, 0)
    assert d.by_bucket[A].seconds == {"ring": 3.0, "allreduce": 1.5, "fp16": 4.0}
    got = {c: v for c, v in d.steps.seconds.items() if c != "mix"}
    assert got == pytest.approx({"ring": 4.0, "allreduce": 2.5, "fp16": 5.0}, abs=0.4)
    assert d.steps.taken == {"ring": 5, "allreduce": 3, "fp16": 3, "mix": 0}
    assert d.path(A, lambda v: v) == "allreduce"
    d._mark = None
    before = d.steps.seconds["allreduce"]
    d.record_step("allreduce", 3.5)          # decided: the running estimate
    assert d.steps.seconds["allreduce"] == 0.75 * before + 0.25 * 3.5


def test_a_decision_holds_until_its_probes_cost_one_percent():
    from inceptionn.drivers.collectives.decide import HOLD_MAX, HOLD_STEPS, _hold
    # P = 4 at 0.1 Gb/s, as measured: the ring 1.13 s a step, fp16 3.26, all-reduce 6.15
    # (two steps of each other config) P = 4 at 0.1 Gb/s, as measured: the ring 1.13 s a
    # step, fp16 3.26, all-reduce 6.15: 2 (2.13 + 5.02) / 1.13 / 0.01 = 1265, held the most
    assert _hold(1.13, [3.26, 6.15]) == HOLD_MAX == 1000
    assert _hold(1.13, [1.5, 2.0]) == 219        # 2 (0.37 + 0.87) / 1.13 / 0.01 = 219.5
    assert _hold(1.0, [1.02, 1.03]) == HOLD_STEPS     # a near tie: probed often
    assert _hold(1.0, [float("inf"), 1.5]) == 100    # untimed: probed at the next refresh


def test_a_paused_clock_leaves_the_step_untimed():
    from inceptionn.drivers.collectives.decide import Decisions
    # paused after step 3: the time until step 4 is in step 4 (timed from step 3's end)
    for pause, want in ((None, [3, 4]), (3, [3])):
        d = Decisions("auto")
        timed = []
        d.record_step = lambda config, s, d=d, timed=timed: timed.append(d.steps.step)
        for step in range(6):
            d.begin(A, 0)
            d.record(A, d.path(A, None), 1.0)
            if step == pause:       # an evaluation between steps: not the hook's time
                d.pause()
        d.begin(A, 0)
        # steps 0-2: DDP's start and the ring's warm-up; 5: the all-reduce's warm-up
        assert timed == want, (pause, timed)


def test_the_step_clock_runs_from_exchanges_end_to_end(monkeypatch):
    """A step is timed from the end of the last step's exchanges to the end of its own,
    the point the ranks pass together, not from its first bucket, which comes when the
    rank's backward has had its share of the cores (decide.py)."""
    from types import SimpleNamespace

    from inceptionn.drivers.collectives import decide
    now = [0.0]
    monkeypatch.setattr(decide, "time", SimpleNamespace(perf_counter=lambda: now[0]))
    d = decide.Decisions("auto")
    timed = []
    d.record_step = lambda config, s: timed.append((d.steps.step, config, s))
    for step in range(8):
        now[0] = 10.0 * step + (3.0 if step % 2 else 0.0)   # the first bucket jitters
        d.begin(A, 0)
        now[0] = 10.0 * step + 8.0                         # the sums end in step
        d.record(A, d.path(A, None), 1.0)
    d.begin(A, 0)
    # steps 0-2: the process's first step, DDP's start and the ring's first probe (not
    # timed); step 5: the all-reduce's first probe
    assert timed == [(3, "ring", 10.0), (4, "ring", 10.0), (6, "allreduce", 10.0),
                     (7, "allreduce", 10.0)], timed
    # a step with no exchange ended in it (none recorded) is not timed, not as 0 s
    now[0] = 88.0
    d.record(A, d.path(A, None), 1.0)       # step 8 (fp16's warm-up) ends
    for step in (9, 10):
        now[0] = 10.0 * step
        d.begin(A, 0)                       # step 9 records nothing
    assert timed[-1][0] == 7, timed
