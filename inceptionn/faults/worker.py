"""One rank of a fault trial, run by torchrun (`python -m inceptionn.faults.worker`).

It trains a small MLP through the default hook (error feedback on), checkpointing model,
optimizer and hook state every `--every` steps, one file per rank (written to a temporary
name, then renamed: a file present is whole). At start it resumes from the last step for
which every rank's file exists. Rank 0 saves the final parameters.

The fault, from the environment (set by the runner), is injected in the first
incarnation only (TORCHELASTIC_RESTART_COUNT 0): INCEPTIONN_FAULT is a JSON object with
"kind" ("kill", "stop", "reset", "link"), "rank", "step", "point" ("forward", "bucket",
"optimizer", "checkpoint"), "bucket" and "delay_s". Every event (start, checkpoint,
fault, error, done) is one JSON line appended to <dir>/events.jsonl, with its time.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import socket
import threading
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

from inceptionn.ddp_hook import IncState, inc_allreduce_hook

WIDTH = 384


def log(args, **event):
    event.update(time=time.time(), rank=int(os.environ.get("RANK", -1)),
                 incarnation=int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)))
    with open(os.path.join(args.dir, "events.jsonl"), "a") as f:
        f.write(json.dumps(event) + "\n")


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, WIDTH), nn.ReLU(), nn.Linear(WIDTH, WIDTH), nn.ReLU(),
                         nn.Linear(WIDTH, WIDTH), nn.ReLU(), nn.Linear(WIDTH, 10))


def batch(seed: int, step: int, rank: int):
    g = torch.Generator().manual_seed((seed * 100003 + step) * 131 + rank)
    x = torch.randn(64, 64, generator=g)
    return x, torch.randint(0, 10, (64,), generator=g)


def _ckpt(args, step, rank):
    return os.path.join(args.dir, "ckpt", f"step{step:05d}-rank{rank}.pt")


def last_complete(args, world) -> int:
    """The last step every rank's checkpoint file exists for (0: none)."""
    d = os.path.join(args.dir, "ckpt")
    steps = {int(n[4:9]) for n in os.listdir(d) if n.endswith(".pt")} if os.path.isdir(d) else set()
    done = [s for s in steps if all(os.path.exists(_ckpt(args, s, r)) for r in range(world))]
    return max(done, default=0)


def reset_connection(sock) -> None:
    """Abort a TCP connection now: connect(AF_UNSPEC) disconnects it (Linux sends RST and
    wakes every thread blocked on it), as a crashed peer stack or a middlebox would."""
    libc = ctypes.CDLL(None, use_errno=True)
    sa = (ctypes.c_ubyte * 16)()            # sockaddr with sa_family AF_UNSPEC (0)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    libc.connect(sock.fileno(), ctypes.byref(sa), ctypes.sizeof(sa))


def enter_host(rank: int) -> None:
    """For the link trial: this process moves into its rank's network namespace (its
    own host on a bridge; INCEPTIONN_FAULT_HOSTS from hosts.py) before it opens a socket
    or starts a thread (threads started later are in it too), and takes the runner's
    store on the bridge's uplink for torchrun's, which it cannot reach from there."""
    hosts = json.loads(os.environ.get("INCEPTIONN_FAULT_HOSTS") or "null")
    if not hosts:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(hosts["netns"][rank], os.O_RDONLY)
    try:
        if libc.setns(fd, 0x40000000) != 0:         # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), "setns into the rank's host failed")
    finally:
        os.close(fd)
    os.environ.update(MASTER_ADDR=hosts["store"], MASTER_PORT=str(hosts["port"]),
                      INCEPTIONN_HOST=hosts["addr"][rank], GLOO_SOCKET_IFNAME="eth0")


class Fault:
    """The fault this rank injects in this incarnation, if any."""

    def __init__(self, args, rank, state):
        spec = json.loads(os.environ.get("INCEPTIONN_FAULT") or "null")
        first = int(os.environ.get("TORCHELASTIC_RESTART_COUNT", 0)) == 0
        self.spec = spec if spec and first and spec["rank"] == rank else None
        self.args, self.state, self.step, self.calls = args, state, -1, 0

    def count(self):
        self.calls += 1         # the hook's calls this step

    def at(self, step, point):
        """Called at each point of each step; fires the fault where it was drawn."""
        if point == "forward":
            self.step, self.calls = step, 0
        s = self.spec
        if s is None or s["step"] != step or s["point"] != point:
            return
        if point == "bucket":
            if self.calls != s["bucket"] + 1:
                return
        self.spec = None
        t = threading.Timer(s["delay_s"], self._fire, args=(s,))
        t.daemon = True
        t.start()
        if point in ("optimizer", "checkpoint"):
            t.join()            # at exactly that point

    def _fire(self, s):
        log(self.args, event="fault", kind=s["kind"], where=describe(s))
        if s["kind"] == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif s["kind"] == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)    # the runner continues it later
        elif s["kind"] == "link":
            pass            # the runner takes the link down on seeing the event
        elif s["kind"] == "reset":
            ring = self.state.collective
            if ring is not None:
                reset_connection(ring.next.data)


def describe(s) -> str:
    where = {"forward": "forward", "optimizer": "before the optimizer step",
             "checkpoint": "writing the checkpoint",
             "bucket": f"exchange of bucket {s.get('bucket')}"}[s["point"]]
    return f"step {s['step']}, {where}, +{s['delay_s'] * 1e3:.0f} ms"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=3.0)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    enter_host(rank)
    # The store of torchrun's rendezvous outlives a restart, and gloo's keys in it are
    # not per incarnation here: the group's keys get the restart count as a prefix.
    import datetime
    store = dist.PrefixStore(
        f"faults/{os.environ.get('TORCHELASTIC_RESTART_COUNT', 0)}",
        dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]),
                      is_master=False, timeout=datetime.timedelta(seconds=60)))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=60))
    net = model()
    opt = torch.optim.SGD(net.parameters(), lr=0.02, momentum=0.9)
    # The ring at every bucket: the trials compare parameters bit for bit with a fault-free
    # run, and decide="auto" takes its paths from times measured in each run.
    state = IncState(timeout_s=args.timeout, decide="ring")
    start = last_complete(args, world)
    if start:
        ck = torch.load(_ckpt(args, start, rank), weights_only=True)
        net.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        state.load_state_dict(ck["hook"])
    log(args, event="start", step=start, pid=os.getpid(),
        master=f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}")
    fault = Fault(args, rank, state)
    ddp = DDP(net, bucket_cap_mb=0.25)

    def hook(st, bucket):
        fut = inc_allreduce_hook(st, bucket)
        fault.count()
        fault.at(fault.step, "bucket")
        return fut

    ddp.register_comm_hook(state, hook)
    try:
        for step in range(start, args.steps):
            fault.at(step, "forward")
            x, y = batch(args.seed, step, rank)
            opt.zero_grad()
            nn.functional.cross_entropy(ddp(x), y).backward()
            fault.at(step, "optimizer")
            opt.step()
            if (step + 1) % args.every == 0 and step + 1 < args.steps:
                path = _ckpt(args, step + 1, rank)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(),
                            "hook": state.state_dict()}, path + ".tmp")
                fault.at(step, "checkpoint")
                os.replace(path + ".tmp", path)
                log(args, event="checkpoint", step=step + 1)
        if rank == 0:
            torch.save([p.detach().clone() for p in net.parameters()],
                       os.path.join(args.dir, "final.pt"))
        log(args, event="done", step=args.steps, buckets_last_step=fault.calls)
    except Exception as e:
        log(args, event="error", error=f"{type(e).__name__}: {e}"[:300])
        raise
    finally:
        state.close()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
