"""The hook's state checkpointed and resumed: n steps, a checkpoint (model, optimizer and
hook state in one torch.save), n more steps in new processes give the parameters of 2n
uninterrupted steps bit for bit, with the default hook (error feedback on) and DDP's
bucket rebuild on both sides of the checkpoint. Without the hook's state (the residuals)
or with the resumed first step exchanged in DDP's first-step bucket, they differ. The
state pickles, and loading it into other settings, another world size or another rank
is refused naming the difference."""

import pickle

import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

N = 6           # steps before and after the checkpoint


def _train(rank, world, steps, load=None, save=None, hook_state=True, auto=False):
    """`steps` steps of a small MLP from the checkpoint `load` (or from scratch); the
    final parameters' bytes, and the checkpoint written to `save`. `auto`: the hook
    decides, from times fixed per rank (so that two runs decide alike)."""
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(30, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                        nn.Linear(64, 2))
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    # auto's decisions follow measured times: two runs are bit-equal where they take the
    # same paths, so the ring everywhere, or auto with the times replaced.
    state = IncState(decide="auto" if auto else "ring")
    if auto:
        d = state.worker.decisions
        real, real_step = d.record, d.record_step
        times = {"ring": 1.0 + rank, "allreduce": 0.5, "fp16": 0.8}   # the all-reduce wins
        d.record = lambda key, path, s: real(key, path, times[path])
        d.record_step = lambda config, s: real_step(config, {**times, "mix": 0.6}[config])
    start = 0
    if load:
        ck = torch.load(load.format(rank=rank), weights_only=True)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        if hook_state == "no decisions":     # the residuals, not where each bucket was
            state.load_state_dict({**ck["hook"], "decisions": []})
        elif hook_state:
            state.load_state_dict(ck["hook"])
        start = ck["step"]
    ddp = DDP(net, bucket_cap_mb=0.01)      # one bucket, then several (the rebuild)
    ddp.register_comm_hook(state, inc_allreduce_hook)
    try:
        for step in range(start, start + steps):
            g = torch.Generator().manual_seed(1000 * step + rank)
            x = torch.randn(32, 30, generator=g)
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x), (x[:, 0] > 0).long()).backward()
            opt.step()
        if save:
            torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                        "hook": state.state_dict(), "step": start + steps},
                       save.format(rank=rank))
        return {"params": b"".join(p.detach().numpy().tobytes() for p in net.parameters()),
                "residual": state.memory.norm(),
                "paths": sorted({d["path"] for d in state.decisions if d["agreed"]})}
    finally:
        state.close()


def _first(rank, world, path):
    auto = path.replace(".pt", "-auto.pt")
    return {"whole": _train(rank, world, 2 * N), "half": _train(rank, world, N, save=path),
            "whole_auto": _train(rank, world, 2 * N, auto=True),
            "half_auto": _train(rank, world, N, save=auto, auto=True)}


def _refusals(rank, world, path):
    """What loading the saved state into the wrong place says."""
    from inceptionn.ddp_hook import IncState
    sd = torch.load(path.format(rank=rank), weights_only=True)["hook"]
    out = {}
    for name, state, bad in (
            ("settings", IncState(seed=1, decide="ring"), sd),
            ("world", IncState(decide="ring"), {**sd, "world": world + 1}),
            ("rank", IncState(decide="ring"),
             torch.load(path.format(rank=1 - rank), weights_only=True)["hook"]),
            ("format", IncState(decide="ring"), {**sd, "format": 99})):
        try:
            state.load_state_dict(bad)
            out[name] = "loaded"
        except ValueError as e:
            out[name] = str(e)
        finally:
            state.close()
    return out


def _second(rank, world, path):
    auto = path.replace(".pt", "-auto.pt")
    return {"resumed": _train(rank, world, N, load=path),
            "no_state": _train(rank, world, N, load=path, hook_state=False),
            "resumed_auto": _train(rank, world, N, load=auto, auto=True),
            "no_decisions": _train(rank, world, N, load=auto, hook_state="no decisions",
                                   auto=True),
            "refusals": _refusals(rank, world, path)}


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("ckpt") / "rank{rank}.pt")
    first = spawn(_first, 2, path)
    second = spawn(_second, 2, path)       # new processes
    return first, second


@pytest.mark.long
def test_resume_gives_the_uninterrupted_runs_parameters_bit_for_bit(resumed):
    first, second = resumed
    for rank in (0, 1):
        a, b = first[rank][0], second[rank][0]
        assert isinstance(a, dict) and isinstance(b, dict), (a, b)
        assert a["half"]["residual"] > 0            # the memory was in use at the checkpoint
        assert b["resumed"]["params"] == a["whole"]["params"], rank
        # The residuals matter: resumed without them, the parameters differ.
        assert b["no_state"]["params"] != a["whole"]["params"], rank


def test_resume_continues_each_buckets_decisions(resumed):
    # Checkpointed mid-way through the probes (steps of ring, all-reduce, fp16, three
    # times, DDP's first step the first): resumed, the schedule finishes its probes and
    # decides (for the all-reduce, step 9) as the uninterrupted run does; without the
    # saved decisions (the residuals loaded) it probes afresh and takes other paths.
    first, second = resumed
    for rank in (0, 1):
        a, b = first[rank][0], second[rank][0]
        assert a["whole_auto"]["paths"] == ["allreduce"], a["whole_auto"]
        assert b["resumed_auto"]["params"] == a["whole_auto"]["params"], rank
        assert b["no_decisions"]["params"] != a["whole_auto"]["params"], rank


def test_loading_into_other_settings_world_or_rank_is_refused(resumed):
    _, second = resumed
    msgs = second[0][0]["refusals"]
    assert "seed: saved 0, now 1" in msgs["settings"], msgs
    assert "job of 3 ranks, this one has 2" in msgs["world"], msgs
    assert "rank 1's, loaded on rank 0" in msgs["rank"], msgs
    assert "format 1" in msgs["format"], msgs


def test_the_state_pickles_without_sockets_or_threads():
    from inceptionn.ddp_hook import IncState
    state = IncState(method="topk", density=0.1, seed=3)
    state.memory.residual[0] = torch.ones(4).numpy()
    state.worker.keys.expected = [4]
    again = pickle.loads(pickle.dumps(state))
    try:
        assert again.settings() == state.settings()
        assert again.memory.residual[0].tolist() == [1.0] * 4
        assert again.worker is not state.worker and again.worker.collective is None
    finally:
        state.close()
        again.close()
