"""Training through the DDP hook: 4 ranks, the HDC network and a small CNN on the 8x8
digits, the ring with the NIC's roundtrip at 2^-10 against DDP's own gloo all-reduce;
every rank holds identical weights after every step."""

import importlib.util
import multiprocessing as mp
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_ddp.py"
STEPS = 200


def _example():
    spec = importlib.util.spec_from_file_location("train_ddp", EXAMPLE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _rank(rank, world, path, q):
    import torch.distributed as dist
    ex = _example()
    dist.init_process_group("gloo", init_method=f"file://{path}", rank=rank, world_size=world)
    try:
        out = {}
        runs = [(m, h) for m in ("hdc", "cnn") for h in ("gloo", "inceptionn")]
        runs += [("cnn", "terngrad"), ("cnn", "gtopk")]     # companion papers' methods
        for model, hook in runs:
            args = ex.parser().parse_args(["--model", model, "--hook", hook, "--steps",
                                           str(STEPS), "--check-identical"])
            out[(model, hook)] = ex.train(args)
        q.put((rank, out))
    except Exception as e:  # reported to the test
        q.put((rank, repr(e)))
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    world = 4
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    path = tmp_path_factory.mktemp("ddp") / "init"
    procs = [ctx.Process(target=_rank, args=(r, world, str(path), q)) for r in range(world)]
    for p in procs:
        p.start()
    try:
        res = dict(q.get(timeout=300) for _ in range(world))
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
    return res


@pytest.mark.parametrize("model", ["hdc", "cnn"])
def test_ring_at_2_10_trains_like_gloo_with_identical_ranks(runs, model):
    for rank, out in runs.items():
        assert isinstance(out, dict), (rank, out)
        for hook in ("gloo", "inceptionn"):
            assert out[(model, hook)]["identical"], (rank, model, hook)
    gloo, inc = runs[0][(model, "gloo")]["accuracy"], runs[0][(model, "inceptionn")]["accuracy"]
    print(f"{model}: gloo {gloo:.1%}, INC+C 2^-10 (emulated) {inc:.1%}")
    assert gloo > 0.9, gloo
    assert inc >= gloo - 0.01, (inc, gloo)


@pytest.mark.parametrize("hook", ["terngrad", "gtopk"])
def test_companion_methods_train_through_the_hook_with_identical_ranks(runs, hook):
    for rank, out in runs.items():
        assert out[("cnn", hook)]["identical"], (rank, hook)
    acc, gloo = runs[0][("cnn", hook)]["accuracy"], runs[0][("cnn", "gloo")]["accuracy"]
    print(f"cnn: {hook} {acc:.1%} (gloo {gloo:.1%})")
    assert acc > 0.85, acc          # it learns (chance is 10%)


def test_hook_rejects_bad_configuration():
    from inceptionn.ddp_hook import IncState
    with pytest.raises(ValueError, match="mode"):
        IncState(mode="tree")
    with pytest.raises(ValueError, match="method"):
        IncState(method="powersgd")
    with pytest.raises(TypeError):
        IncState(method="topk", method_kw={"bogus": 1})
    with pytest.raises(ValueError, match="exactly one"):
        IncState(compress=True, emulate=True)


def test_example_refuses_to_run_without_torchrun(capsys):
    assert _example().main([]) == 2
    assert "torchrun" in capsys.readouterr().err
