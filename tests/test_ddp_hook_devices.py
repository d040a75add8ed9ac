"""The DDP hook's values on host and CUDA buckets (the CUDA cases run where torch sees a
GPU: `make test-cuda`).

Two ranks train a model under gloo, on the host or the GPU, with several buckets, so DDP
hands the hook its buffers and rebuilds its buckets after the first step. Every bucket the hook
receives is recorded (a host copy at the call) with the tensor its Future completes
with. Afterwards every rank replays the same buckets, in the same order, through a
fresh hook on host tensors: the values must be the replay's bit for bit, for the ring
and for a compressor with state (top-k, error feedback). A hook that reads the bucket
after DDP has moved on, reads a CUDA bucket before the backward's kernels wrote it, or
completes its Future on the wrong device, gives other values or fails.
"""

import pytest

torch = pytest.importorskip("torch")

from test_ddp_hook import spawn  # noqa: E402  (the spawned-ranks helper)

CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="needs a CUDA GPU (make test-cuda on a GPU machine)")

STEPS = 4


class _HostBucket:
    """What the hook reads of a GradBucket, over a host copy."""

    def __init__(self, buf, params, index):
        self._buf, self._params, self._index = buf, params, index

    def buffer(self):
        return self._buf

    def index(self):        # DDP's order: the hook's step clock (decide.py)
        return self._index

    def parameters(self):
        return self._params


def _device_vs_replay(rank, world, device, method, method_kw, replay_kw=None):
    import torch
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook

    dev = torch.device(device)
    cuda = dev.type == "cuda"
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                        nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
    ddp = DDP(net, device_ids=[0] if cuda else None, bucket_cap_mb=0.05)
    state = IncState(method=method, **method_kw)
    seen = []    # (host input, the parameters' identities, Future, its value kept)

    def hook(st, bucket):
        buf = bucket.buffer()
        assert buf.device.type == dev.type
        params = [(p.data_ptr(), p.numel()) for p in bucket.parameters()]
        index = bucket.index()
        inp = buf.detach().cpu().clone()       # before the hook: it may work in place
        kept: list = []

        def keep(f):
            # A copy of the result before DDP may go on: DDP waits on the Future it is
            # handed, and a Future wakes its waiters before it runs its then()
            # callbacks, so a copy taken in a side callback can race the next
            # backward writing the bucket's memory (seen under load).
            kept.append(f.value().detach().clone())
            return f.value()

        fut = inc_allreduce_hook(st, bucket).then(keep)
        seen.append((inp, params, index, fut, kept))
        return fut

    ddp.register_comm_hook(state, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank + 1)
    for _ in range(STEPS):
        x = torch.randn(128, 64, generator=g).to(dev)
        y = torch.randint(0, 10, (128,), generator=g).to(dev)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), y).backward()
        opt.step()
    if cuda:
        torch.cuda.synchronize()
    outs = []
    for inp, params, index, fut, kept in seen:
        fut.wait()
        outs.append((inp, params, index, kept[0]))
    assert all(o.device.type == dev.type for *_, o in outs), \
        "the Future must complete on the bucket's device"
    state.close()

    # The same buckets, in the same order, through a fresh hook on host tensors; each
    # CUDA parameter stands in by one host tensor (the hook keys its state by parameter).
    host = IncState(method=method, **(method_kw if replay_kw is None else replay_kw))
    standins: dict = {}
    mismatches = 0
    for inp, params, index, out in outs:
        ps = [standins.setdefault(key, torch.empty(key[1])) for key in params]
        ref = inc_allreduce_hook(host, _HostBucket(inp.clone(), ps, index)).wait()
        mismatches += int(not torch.equal(ref, out.cpu()))
    host.close()
    return len(outs), mismatches


CASES = [("inceptionn", {}), ("topk", {"density": 0.05})]
# The ring over the process group's point-to-point (gloo here), coded on the bucket's
# device, against the socket ring's host path with the same bound (the scale-following
# one by default, s per chunk; the torch transport keeps no error-feedback memory, so
# the replay keeps none either): the same bits.
TORCH_CASES = [{"transport": "torch"}, {"transport": "torch", "codec": "paper"},
               {"transport": "torch", "chunk_floats": 1000},
               {"transport": "torch", "chunk_floats": 1000, "bound": "absolute"}]


def _replay(kw):
    return {k: v for k, v in kw.items() if k != "transport"} | {"error_feedback": False}


@pytest.mark.parametrize("method,method_kw", CASES)
def test_host_buckets_give_the_replays_values_bit_for_bit(method, method_kw):
    """Fails on a hook that reads DDP's bucket after the call (3 runs of 4 here)."""
    _check(spawn(_device_vs_replay, 2, "cpu", method, method_kw, timeout=300))


@pytest.mark.long
def test_torch_transport_on_host_buckets_gives_the_socket_rings_values():
    """Several buckets, overlapped with the backward, through TorchRing over gloo, in
    several rounds per block (the other cases run on CUDA; the codecs' every k is
    tests/test_device_codec.py's)."""
    for kw in TORCH_CASES[-2:]:
        _check(spawn(_device_vs_replay, 2, "cpu", "inceptionn", kw, _replay(kw), timeout=300))


@CUDA
@pytest.mark.parametrize("kw", TORCH_CASES)
def test_torch_transport_codes_cuda_buckets_on_the_gpu_bit_for_bit(kw):
    _check(spawn(_device_vs_replay, 2, "cuda", "inceptionn", kw, _replay(kw), timeout=300))


@CUDA
@pytest.mark.parametrize("method,method_kw", CASES + [("inceptionn", {"codec": "paper"})])
def test_cuda_buckets_give_the_host_paths_values_bit_for_bit(method, method_kw):
    _check(spawn(_device_vs_replay, 2, "cuda", method, method_kw, timeout=300))


def _check(res):
    for rank in range(2):
        got, _ = res[rank]
        assert isinstance(got, tuple), got
        n, bad = got
        assert n >= 2 * STEPS, f"rank {rank}: only {n} buckets seen"
        assert bad == 0, f"rank {rank}: {bad} of {n} buckets differ from the host path"
