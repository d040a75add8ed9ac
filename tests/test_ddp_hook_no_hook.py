"""A rank started without the hook while the other has it: the hook's rank raises at its
timeout (rank 1 never publishes its settings), and the rank without it, which waits in
gloo's allreduce for rank 0, raises too instead of waiting for gloo's own timeout
(30 min): rank 0 ends its gloo connections when its ring cannot be set up
(inceptionn/group_teardown.py)."""

import time

from test_ddp_hook import spawn

TIMEOUT = 3


def _rank0_with_hook(rank, world):
    import torch
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel as DDP

    from inceptionn.ddp_hook import IncState, inc_allreduce_hook
    torch.manual_seed(0)
    net = DDP(nn.Linear(64, 64))
    if rank == 0:
        net.register_comm_hook(IncState(timeout_s=TIMEOUT), inc_allreduce_hook)
    t0 = time.monotonic()
    try:
        net(torch.randn(4, 64)).sum().backward()
        return "trained", time.monotonic() - t0
    except Exception as e:  # reported to the test
        return f"{type(e).__name__}: {e}", time.monotonic() - t0


def test_a_rank_without_the_hook_raises_too():
    res = spawn(_rank0_with_hook, 2, timeout=120)
    (out0, took0), _ = res[0]
    (out1, took1), _ = res[1]
    assert "did not appear" in out0 and "rank 1" in out0, out0
    assert out1 != "trained" and "closed" in out1, out1
    print(f"\nrank 0 (hook) raised after {took0:.1f} s, rank 1 (no hook) after {took1:.1f} s "
          f"(timeout {TIMEOUT} s; without the teardown rank 1 waits for gloo's 30 min)")
