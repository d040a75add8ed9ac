"""The hook's per-bucket decision between the coded ring, the process group's own
all-reduce and its fp16 all-reduce (drivers/collectives/decide.py), in two spawned
ranks over gloo: every outcome, taken by both ranks from the slowest rank's times (each
rank alone would have chosen otherwise); the error-feedback memory exact across the
switches (zero after a plain all-reduce, fp16's own rounding kept, conserved over the
steps); the group's collectives in the same order on both ranks with buckets on
different paths and agreeing at different steps (hook_direct.py); decide="allreduce"
giving gloo's numbers bit for bit; the decisions in the state_dict and back; and
bfloat16 and float16 buckets through the paths."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

DTYPES = (("bfloat16", "ring"), ("float16", "ring"), ("bfloat16", "allreduce"))
STEPS = 12      # after DDP's rebuild (step 0), 9 probes, then the first decision (step 10)
# Times each rank "measures" (seconds per exchange, by path), replacing the real ones:
# rank 0 alone would choose another path than the one the slowest rank's times give.
FAKE = {"ring-wins": ({"ring": 0.2, "allreduce": 0.25, "fp16": 0.15},
                      {"ring": 0.1, "allreduce": 0.3, "fp16": 0.3}),
        "allreduce-wins": ({"ring": 0.1, "allreduce": 0.2, "fp16": 0.3},
                           {"ring": 1.0, "allreduce": 0.5, "fp16": 0.6}),
        "fp16-wins": ({"ring": 0.1, "allreduce": 0.4, "fp16": 0.3},
                      {"ring": 1.0, "allreduce": 0.5, "fp16": 0.35})}
PATHS = ("ring", "allreduce", "fp16")
# Buckets on different paths, agreeing at different steps: the bucket holding the
# 64 x 64 weight codes (ring 1.25x faster: held 5 calls), the others all-reduce (2x:
# held 8), with the hold shortened (decide.HOLD_CALLS 4, HOLD_MAX 8) and small buckets.
MIXED_STEPS = 27
MIXED = ({"ring": 0.4, "allreduce": 0.5, "fp16": 0.6}, {"ring": 0.5, "allreduce": 0.25,
                                                        "fp16": 0.6})


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
        real = state.worker.decisions.record
        state.worker.decisions.record = (
            lambda key, path, s, real=real, f=fake[rank]: real(key, path, f[path]))
        try:
            rows = _steps(rank, state)
            out[name] = {"paths": [r["path"] for r in rows], "got": rows[-1]["got"],
                         "decisions": state.decisions}
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


def _mixed(rank):
    from inceptionn.ddp_hook import IncState
    from inceptionn.drivers.collectives import decide
    decide.HOLD_CALLS, decide.HOLD_MAX = 4, 8
    state = IncState(timeout_s=20)
    real = state.worker.decisions.record

    def fake(key, path, s):
        times = MIXED[0] if any(n == 64 * 64 for _, n in key) else MIXED[1]
        real(key, path, times[path] * (1 + rank))
    state.worker.decisions.record = fake
    try:
        rows = _steps(rank, state, steps=MIXED_STEPS, cap_mb=0.01)
        return {"paths": [r["path"] for r in rows], "got": [r["got"] for r in rows],
                "decisions": state.decisions, "direct": state.worker.direct_calls,
                "calls": state.calls}
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
        # DDP's first bucket, then the probes' warm-ups (ring, all-reduce, fp16), then
        # each path timed once
        _steps(0, state, steps=7)
        return state.decisions
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
    # Step 0: DDP's first bucket (a ring); after the rebuild the probes alternate.
    assert a["paths"] == b["paths"], (a["paths"], b["paths"])
    assert a["paths"][1:10] == [[p] for p in PATHS] * 3, a["paths"]
    assert a["paths"][10:] == [[path]] * (STEPS - 10), a["paths"]
    decided_now = [d for d in a["decisions"] if d["agreed"]]
    assert len(decided_now) == 1 and decided_now[0]["path"] == path, a["decisions"]
    slowest = {p: max(FAKE[name][r][p] for r in (0, 1)) for p in PATHS}
    assert decided_now[0]["agreed"] == slowest
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
    agreed_at = {d["decide_at"] for d in a["decisions"] if d["agreed"]}
    assert len(agreed_at) >= 2, a["decisions"]        # out of phase: agreeing apart
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
    for r in (0, 1):
        (d,) = [d for d in decided[r]["slow_snapshot"] if d["taken"]["ring"] >= 2]
        # the plain paths go from the hook's call (no snapshot): they take no SLOW
        assert d["seconds"]["ring"] >= SLOW > max(d["seconds"]["allreduce"],
                                                  d["seconds"]["fp16"]), d


def test_the_decisions_are_in_the_state_and_come_back(decided):
    m = decided[0]["measured"]
    saved = m["sd"]["decisions"]
    assert saved and repr(saved) == repr(m["reloaded"])      # repr: nan == nan
    assert {d["calls"] for d in saved} == {d["calls"] for d in m["decisions"]}
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


def test_the_schedule_probes_agrees_holds_and_probes_again():
    from inceptionn.drivers.collectives.decide import HOLD_CALLS, Decisions
    d = Decisions("auto")
    key = ((0, 10), (1, 5))
    agreed = []

    def agree(values):              # the other rank is slower on the ring
        agreed.append(list(values))
        return [max(values[0], 3.0), values[1], values[2]]

    times = {"ring": 1.0, "allreduce": 2.0, "fp16": 4.0}
    paths = []
    for _ in range(9 + 3 * HOLD_CALLS):
        p = d.path(key, agree)
        paths.append(p)
        d.record(key, p, times[p])
    assert paths[:9] == ["ring", "allreduce", "fp16"] * 3
    # Agreed at call 9: ring 3.0 (the other rank's) against 2.0 and 4.0: the all-reduce,
    # held 50 x 1.5 = 75 calls; the two calls before the next decision probe the others.
    assert agreed[0] == [1.0, 2.0, 4.0] and paths[9] == "allreduce"
    hold = int(HOLD_CALLS * 1.5)
    assert paths[10:9 + hold - 2] == ["allreduce"] * (hold - 3)
    assert paths[9 + hold - 2:9 + hold] == ["ring", "fp16"] and len(agreed) == 2
    (rep,) = d.report()
    assert rep["values"] == 15 and rep["agreed"] == {"ring": 3.0, "allreduce": 2.0,
                                                     "fp16": 4.0}
    assert sum(rep["taken"].values()) == rep["calls"]
    # The state comes back as it was (the schedule included); one saved before fp16
    # was a path loads with fp16 untimed.
    again = Decisions("auto")
    again.load(d.state(), [10, 5])
    assert again.report() == d.report()
    old = d.state()
    for c in old:
        del c["seconds"]["fp16"], c["taken"]["fp16"]
    again.load(old, [10, 5])
    (c,) = again.by_bucket.values()
    assert np.isnan(c.seconds["fp16"]) and c.taken["fp16"] == 0
    assert Decisions("ring").path(key, agree) == "ring"


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
    key = ((0, 10),)
    assert d.peek(key) is None          # new: the first call decides nothing, but unknown
    times = {"ring": 3.0, "allreduce": 2.0, "fp16": 1.0}
    paths = []
    for _ in range(9 + 60):
        p = d.path(key, lambda v: v)
        paths.append(p)
        d.record(key, p, times[p])
    assert paths[:9] == ["ring", "allreduce", "fp16"] * 3
    # fp16 wins, held 50 x 2 (the second fastest, 2.0 / 1.0) = 100 calls
    assert paths[9:] == ["fp16"] * 60
    (c,) = d.by_bucket.values()
    assert c.decide_at == 109 and c.agreed == times
    while c.calls < c.decide_at - 2:
        d.record(key, "fp16", 1.0)
    # the probes: each other path once, in order, just before the next decision
    assert [d.peek(key), d.path(key, None)] == ["ring", "ring"]
    d.record(key, "ring", 3.0)
    assert d.peek(key) == "allreduce"
    d.record(key, "allreduce", 2.0)
    assert d.peek(key) is None          # the call that agrees
    # a tie goes to the exact path first
    tie = Decisions("auto")
    for _ in range(9):
        tie.record(key, tie.path(key, None), 1.0)
    assert tie.path(key, lambda v: v) == "allreduce"
    assert Decisions("fp16").peek(key) == "fp16"


def test_the_probes_estimate_is_their_fastest_and_old_states_finish_them():
    from inceptionn.drivers.collectives.decide import Choice, Decisions
    d = Decisions("auto")
    key = ((0, 10),)
    # per path: the warm-up (dropped), then two probes; a load spike slows the second
    samples = {"ring": [9.0, 3.0, 5.0], "allreduce": [9.0, 2.0, 1.5], "fp16": [9.0, 4.0, 6.0]}
    for i in range(9):
        p = d.path(key, None)
        d.record(key, p, samples[p][i // 3])
    assert d.by_bucket[key].seconds == {"ring": 3.0, "allreduce": 1.5, "fp16": 4.0}
    assert d.path(key, lambda v: v) == "allreduce"
    d.record(key, "allreduce", 2.5)         # decided: the running estimate
    assert d.by_bucket[key].seconds["allreduce"] == 0.75 * 1.5 + 0.25 * 2.5
    # a state saved with two probes a path, mid-way or just decided, finishes three
    for calls, decide_at in ((5, 6), (7, 60)):
        c = Choice.from_dict({**Choice().as_dict(), "calls": calls, "decide_at": decide_at})
        assert c.decide_at == 9, (calls, decide_at)

