"""`make faults`: training under torchrun's elastic restarts with faults injected.

Each trial runs `torchrun --max-restarts` (c10d rendezvous on localhost) over
inceptionn/faults/worker.py: a fault-free run first (per world size), then the drawn
faults: a rank SIGKILLed at a random point of a random step (forward, the exchange of a
bucket, before the optimizer step, while writing its checkpoint), a rank's ring
connection reset in the middle of an exchange, a rank stopped (SIGSTOP) past the hook's
timeout, a rank's link down for a few seconds (hosts.py: network namespaces, root).
Every trial must end with the fault-free run's parameters, bit for bit, and leave no
process (nor namespace) behind. The draws follow `--seed`; the table is printed and written to
docs/reliability.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "reliability.md"
BEGIN, END = "<!-- faults:begin -->", "<!-- faults:end -->"
POINTS = ("forward", "bucket", "optimizer", "checkpoint")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def events(d: Path) -> list[dict]:
    f = d / "events.jsonl"
    if not f.exists():
        return []
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def _named(token: str) -> list[tuple[int, str]]:
    """Processes whose command line names this trial's folder: its workers, and once it
    is over, what it left behind."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if token in cmd:
            out.append((int(pid), cmd))
    return out


def run_job(d: Path, world: int, args, fault: dict | None = None) -> dict:
    """One torchrun job in folder d; its status, events and what it left."""
    from inceptionn.process_guard import guard_group, kill_tree, release
    d.mkdir(parents=True)
    port = _free_port()
    env = dict(os.environ, INCEPTIONN_FAULT=json.dumps(fault) if fault else "",
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    hosts, link = None, {}
    if fault and fault["kind"] == "link":       # each rank its own host, on a bridge
        import datetime

        import torch.distributed as dist

        from .hosts import Hosts
        hosts = Hosts(world)
        store = dist.TCPStore("0.0.0.0", 0, is_master=True, wait_for_workers=False,
                              timeout=datetime.timedelta(seconds=60))
        env["INCEPTIONN_FAULT_HOSTS"] = json.dumps(hosts.env(store.port))
    argv = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1",
            f"--nproc-per-node={world}", f"--max-restarts={args.max_restarts}",
            "--monitor-interval=0.2", "--rdzv-backend=c10d",
            f"--rdzv-endpoint=127.0.0.1:{port}", "-m", "inceptionn.faults.worker",
            "--dir", str(d), "--steps", str(args.steps), "--every", str(args.every),
            "--seed", str(args.seed), "--timeout", str(args.timeout)]
    with open(d / "torchrun.log", "w") as logf:
        p = subprocess.Popen(argv, env=env, stdout=logf, stderr=subprocess.STDOUT,
                             start_new_session=True, cwd=ROOT)
    guard_group(p.pid)
    deadline, continued, workers = time.monotonic() + args.job_timeout, False, set()
    try:
        while p.poll() is None:
            # torchrun starts each worker in a session of its own: guarded one by one.
            for pid in {pid for pid, _ in _named(str(d))} - workers - {p.pid}:
                guard_group(pid)
                workers.add(pid)
            if time.monotonic() > deadline:
                kill_tree({p.pid})
                break
            if hosts is not None:
                _link_fault(hosts, fault, d, link, args)
            if fault and fault["kind"] == "stop" and not continued:
                fired = [e for e in events(d) if e["event"] == "fault"]
                # Past the hook's timeout the peers have raised; the stopped rank is
                # continued so that torchrun's SIGTERM can end it.
                if fired and time.time() > fired[0]["time"] + args.timeout + 1.5:
                    victim = [e["pid"] for e in events(d) if e["event"] == "start"
                              and e["rank"] == fault["rank"] and e["incarnation"] == 0]
                    for pid in victim:
                        try:
                            os.kill(pid, signal.SIGCONT)
                        except ProcessLookupError:
                            pass
                    continued = True
            time.sleep(0.1)
    finally:
        rc = p.wait()
        release(p.pid)
        if hosts is not None:
            if "down" in link and "up" not in link:
                hosts.link(fault["rank"], True)
            held = hosts.pids()
            hosts.close()
    time.sleep(0.2)
    left = [f"pid {pid}: {cmd[:80]}" for pid, cmd in _named(str(d))]
    workers |= {pid for pid, _ in _named(str(d))}
    kill_tree(workers)          # what torchrun left (reported below), gone all the same
    for pid in workers:
        release(pid)
    port_free = True
    try:
        with socket.socket() as s:
            s.bind(("", port))
    except OSError:
        port_free = False
    if hosts is not None:
        left += [f"namespace of pid {pid}" for pid in held if os.path.exists(f"/proc/{pid}")]
    return {"rc": rc, "events": events(d), "left": left, "port_free": port_free}


def _link_fault(hosts, fault, d: Path, link: dict, args) -> None:
    """The victim's link down once its fault event is logged, up `link_down` s later."""
    if "down" not in link and any(e["event"] == "fault" for e in events(d)):
        hosts.link(fault["rank"], False)
        link["down"] = time.time()
    elif "down" in link and "up" not in link and time.time() > link["down"] + args.link_down:
        hosts.link(fault["rank"], True)
        link["up"] = time.time()


def final_params(d: Path):
    import torch
    f = d / "final.pt"
    return torch.load(f, weights_only=True) if f.exists() else None


def same(a, b) -> bool:
    import torch
    return a is not None and b is not None and len(a) == len(b) and all(
        torch.equal(x, y) for x, y in zip(a, b))


def draw(rng: random.Random, kind: str, world: int, args) -> dict:
    """A fault at a random point of a random step (not the first: DDP's rebuild)."""
    point = "bucket" if kind != "kill" else rng.choice(POINTS)
    if point == "checkpoint":
        step = rng.choice([s for s in range(args.steps - 1) if (s + 1) % args.every == 0])
    else:
        step = rng.randrange(1, args.steps)
    # A reset lands within the bucket's exchange (a few ms on loopback); a kill or stop
    # anywhere from the bucket's start on.
    span = {"forward": 0.01, "bucket": 0.003 if kind in ("reset", "link") else 0.02}
    delay = rng.uniform(0, span.get(point, 0.0))
    return {"kind": kind, "rank": rng.randrange(world), "step": step, "point": point,
            "bucket": rng.randrange(args.buckets), "delay_s": round(delay, 4)}


def summarize(name: str, world: int, fault: dict | None, res: dict, base) -> dict:
    from inceptionn.faults.worker import describe
    ev = res["events"]
    fired = [e for e in ev if e["event"] == "fault"]
    t0 = fired[0]["time"] if fired else None
    victim = fault["rank"] if fault else None
    errors = [e for e in ev if e["event"] == "error" and e["incarnation"] == 0]
    peers = sorted({e["rank"] for e in errors if e["rank"] != victim})
    first_err = min((e["time"] for e in errors if e["rank"] != victim), default=None)
    restarts = [e for e in ev if e["event"] == "start" and e["incarnation"] > 0]
    first_restart = min((e["time"] for e in restarts), default=None)
    resumed = sorted({e["step"] for e in restarts})
    params = final_params(Path(res["dir"]))
    row = {
        "trial": name, "P": world,
        "fault": fault["kind"] if fault else "none",
        "where": (f"rank {fault['rank']}, " + describe(fault)) if fault else "-",
        "fired": bool(fired) or fault is None,
        "peers_raised": (f"{len(peers)}/{world - 1} after "
                         f"{first_err - t0:.2f} s" if first_err and t0 else f"0/{world - 1}")
        if fault else "-",
        "restarted": (f"after {first_restart - t0:.1f} s, from step {resumed[0]}"
                      if first_restart and t0 else "no") if fault else "-",
        "equal": "yes" if (base is None and params is not None) or same(params, base) else "no",
        "left": ", ".join(res["left"]) or ("none" if res["port_free"] else "port held"),
        "rc": res["rc"],
        "error": errors[0]["error"][:110] if errors else "",
    }
    return row


def table(rows) -> str:
    head = ("| trial | P | fault | where | peers raised | restarted | final parameters = "
            "fault-free | left behind |\n|---|---|---|---|---|---|---|---|\n")
    return head + "".join(
        f"| {r['trial']} | {r['P']} | {r['fault']} | {r['where']} | {r['peers_raised']} | "
        f"{r['restarted']} | {r['equal']} | {r['left']} |\n" for r in rows)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    if BEGIN in doc and END in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        doc = doc[:a] + f"{BEGIN}\n{text}{END}" + doc[b:]
    else:
        doc += f"\n{BEGIN}\n{text}{END}\n"
    DOC.write_text(doc)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m inceptionn.faults",
                                 description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=48)
    ap.add_argument("--kills", type=int, default=10, help="random SIGKILL trials at P = 2")
    ap.add_argument("--kills-p4", type=int, default=2, help="random SIGKILL trials at P = 4")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--buckets", type=int, default=3,
                    help="buckets drawn from (the worker's buckets per step after DDP's rebuild)")
    ap.add_argument("--timeout", type=float, default=3.0, help="the hook's timeout_s")
    ap.add_argument("--link-down", type=float, default=4.0,
                    help="seconds the link trial's link stays down")
    ap.add_argument("--no-link", action="store_true",
                    help="skip the link trial (it needs root: namespaces and veth)")
    ap.add_argument("--max-restarts", type=int, default=3)
    ap.add_argument("--job-timeout", type=float, default=300.0)
    ap.add_argument("--no-doc", action="store_true", help="print the table only")
    ap.add_argument("--only", choices=("kill", "reset", "stop", "link"),
                    help="run only this kind of trial (and the fault-free runs)")
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    from inceptionn.drivers.netns import netns_available
    why = None if args.no_link else netns_available()
    if why:
        print(f"the link trial is left out: it {why}", flush=True)
        args.no_link = True
    plan: list[tuple[str, int, dict | None]] = []
    for world, kills in ((2, args.kills), (4, args.kills_p4)):
        if kills:
            plan.append((f"fault-free P={world}", world, None))
            plan += [(f"kill {i + 1}", world, draw(rng, "kill", world, args))
                     for i in range(kills)]
            if world == 2:
                kinds = ("reset", "stop") + (() if args.no_link else ("link",))
                plan += [(kind, world, draw(rng, kind, world, args)) for kind in kinds]
    if args.only:           # the fault-free runs and the named kind of trial
        plan = [t for t in plan if t[2] is None or t[2]["kind"] == args.only]
    top = Path(tempfile.mkdtemp(prefix="inceptionn-faults-"))
    rows, base = [], {}
    try:
        for i, (name, world, fault) in enumerate(plan):
            t = time.monotonic()
            print(f"[{i + 1}/{len(plan)}] {name} (P={world}) "
                  f"{json.dumps(fault) if fault else ''}", flush=True)
            d = top / f"trial{i:02d}"
            res = run_job(d, world, args, fault)
            res["dir"] = str(d)
            if fault is None:
                base[world] = final_params(d)
            row = summarize(name, world, fault, res, base.get(world) if fault else None)
            rows.append(row)
            print(f"    rc {row['rc']}, fired {row['fired']}, peers raised "
                  f"{row['peers_raised']}, restarted {row['restarted']}, equal "
                  f"{row['equal']}, left {row['left']} ({time.monotonic() - t:.0f} s)"
                  + (f"\n    first error: {row['error']}" if row["error"] else ""), flush=True)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    out = table(rows)
    load = os.getloadavg()
    # The page's figures carry the date they were measured.
    note = (f"\n`make faults` ({datetime.date.today().isoformat()}; seed {args.seed}, "
            f"{args.steps} steps, a checkpoint every "
            f"{args.every}, the hook's timeout {args.timeout:g} s), on a shared 2-core "
            f"machine, load average {load[0]:.1f} at the end. Errors seen first on a peer:\n\n"
            + "".join(f"- {r['trial']}: {r['error']}\n" for r in rows if r["error"]))
    print(out + note)
    if not args.no_doc:
        write_doc(out + note)
    ok = all(r["equal"] == "yes" and r["left"] == "none" and r["fired"] for r in rows)
    print("every trial ended with the fault-free parameters and left nothing" if ok
          else "SOME TRIALS FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
