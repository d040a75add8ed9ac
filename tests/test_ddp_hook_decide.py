"""The hook's per-bucket decision between the coded ring and the process group's own
all-reduce (drivers/collectives/decide.py), in two spawned ranks over gloo: both
outcomes, taken by both ranks from the slowest rank's times (each rank alone would have
chosen otherwise); the error-feedback memory exact across the switches (zero after a
plain all-reduce, conserved over the steps); decide="allreduce" giving gloo's numbers
bit for bit; the decisions in the state_dict and back; and bfloat16 and float16 buckets
through both paths."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

DTYPES = (("bfloat16", "ring"), ("float16", "ring"), ("bfloat16", "allreduce"))
STEPS = 7       # after DDP's rebuild (step 0), 4 probes, then the first decision (step 5)
# Times each rank "measures" (seconds per exchange, by path), replacing the real ones:
# rank 0 alone would choose the other path than the one the slowest rank's times give.
FAKE = {"ring-wins": ({"ring": 0.2, "allreduce": 0.25}, {"ring": 0.1, "allreduce": 0.3}),
        "allreduce-wins": ({"ring": 0.1, "allreduce": 0.2}, {"ring": 1.0, "allreduce": 0.5})}


def _net():
    from torch import nn
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 2))


def _steps(rank, state, steps=STEPS, dtype=torch.float32):
    """`steps` steps of DDP over _net() with `state`'s hook (None: gloo's all-reduce);
    per step the path taken, the residual's norm, the rank's own gradient and what
    DDP delivered."""
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import inc_allreduce_hook
    net = DDP(_net().to(dtype))
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
    out = {"ring": 0, "allreduce": 0}
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
            out[name] = [r["got"] for r in _steps(rank, state, steps=2)]
        finally:
            if state is not None:
                state.close()
    return out


@pytest.fixture(scope="module")
def decided():
    res = spawn(_decide, 2, timeout=180)
    outs = [res[r][0] for r in (0, 1)]
    assert all(isinstance(o, dict) for o in outs), outs
    return outs


@pytest.mark.parametrize("name,path", [("ring-wins", "ring"), ("allreduce-wins", "allreduce")])
def test_both_ranks_take_the_path_the_slowest_ranks_times_give(decided, name, path):
    a, b = decided[0][name], decided[1][name]
    # Step 0: DDP's first bucket (a ring); after the rebuild the probes alternate.
    assert a["paths"] == b["paths"], (a["paths"], b["paths"])
    assert a["paths"][1:5] == [["ring"], ["allreduce"], ["ring"], ["allreduce"]], a["paths"]
    assert a["paths"][5:] == [[path]] * (STEPS - 5), a["paths"]
    decided_now = [d for d in a["decisions"] if d["agreed"]]
    assert len(decided_now) == 1 and decided_now[0]["path"] == path, a["decisions"]
    slowest = {p: max(FAKE[name][r][p] for r in (0, 1)) for p in ("ring", "allreduce")}
    assert decided_now[0]["agreed"] == slowest
    assert [d["path"] for d in b["decisions"] if d["agreed"]] == [path]
    assert np.array_equal(a["got"], b["got"])              # the ranks' gradients identical


def test_memory_is_exact_across_the_switches(decided):
    rows = [decided[r]["measured"]["rows"] for r in (0, 1)]
    paths = [r["path"] for r in rows[0]]
    assert paths == [r["path"] for r in rows[1]]
    assert ["ring"] in paths[1:] and ["allreduce"] in paths[1:], paths
    for step, path in enumerate(paths):
        for r in (0, 1):      # nothing dropped on the plain path: no residual after it
            assert (rows[r][step]["resid"] == 0) == (path == ["allreduce"]), (step, r, path)
    # What DDP delivered over the steps plus the ranks' mean residual is the sum of the
    # true mean gradients: the residual added in before a plain all-reduce reaches the
    # model, and none is lost or counted twice at a switch.
    true = sum((rows[0][s]["mine"] + rows[1][s]["mine"]) / 2 for s in range(STEPS))
    got = sum(rows[0][s]["got"] for s in range(STEPS))
    assert np.array_equal(got, sum(rows[1][s]["got"] for s in range(STEPS)))
    resid = (rows[0][-1]["resid_vec"] + rows[1][-1]["resid_vec"]) / 2
    off = np.linalg.norm(got + resid - true) / np.linalg.norm(true)
    ring_step = max(s for s, p in enumerate(paths) if p == ["ring"])
    kept = rows[0][ring_step]["resid"] / np.linalg.norm(true)
    print(f"paths {paths}; |delivered + residual - true| / |true| = {off:.2e}; the residual "
          f"after the last ring step, relative: {kept:.2e}")
    assert off < 1e-6, off
    assert kept > 100 * max(off, 1e-7), (kept, off)


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


def test_the_decisions_are_in_the_state_and_come_back(decided):
    m = decided[0]["measured"]
    saved = m["sd"]["decisions"]
    assert saved and repr(saved) == repr(m["reloaded"])      # repr: nan == nan
    assert {d["calls"] for d in saved} == {d["calls"] for d in m["decisions"]}
    for d in m["decisions"]:
        assert set(d["seconds"]) == {"ring", "allreduce"}
        assert d["taken"]["ring"] + d["taken"]["allreduce"] == d["calls"]


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
        return [max(values[0], 3.0), values[1]]

    times = {"ring": 1.0, "allreduce": 2.0}
    paths = []
    for _ in range(4 + 3 * HOLD_CALLS):
        p = d.path(key, agree)
        paths.append(p)
        d.record(key, p, times[p])
    assert paths[:4] == ["ring", "allreduce", "ring", "allreduce"]
    # Agreed at call 4: ring 3.0 (the other rank's) against 2.0: the all-reduce, held
    # 50 x 1.5 = 75 calls; the call before the next decision probes the ring.
    assert agreed[0] == [1.0, 2.0] and paths[4] == "allreduce"
    hold = int(HOLD_CALLS * 1.5)
    assert paths[5:4 + hold - 1] == ["allreduce"] * (hold - 2)
    assert paths[4 + hold - 1] == "ring" and len(agreed) == 2
    (rep,) = d.report()
    assert rep["values"] == 15 and rep["agreed"] == {"ring": 3.0, "allreduce": 2.0}
    assert rep["taken"]["ring"] + rep["taken"]["allreduce"] == rep["calls"]
    # The state comes back as it was (the schedule included).
    again = Decisions("auto")
    again.load(d.state(), [10, 5])
    assert again.report() == d.report()
    assert Decisions("ring").path(key, agree) == "ring"
