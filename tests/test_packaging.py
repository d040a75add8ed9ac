"""The extras in pyproject.toml: each a subset of dev's pins, and the demo's enough to run
the demo (make demo installs only it on a fresh machine)."""

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


@pytest.mark.parametrize("extra", ["hw", "torch", "demo"])
def test_every_pin_of_an_extra_is_devs(extra):
    assert EXTRAS[extra] and set(EXTRAS[extra]) <= set(EXTRAS["dev"]), \
        set(EXTRAS[extra]) - set(EXTRAS["dev"])


def test_the_demo_extra_leaves_torch_out():
    assert not any(d.startswith("torch") for d in EXTRAS["demo"])


@pytest.mark.long
def test_the_demo_runs_without_torch(tmp_path):
    """The whole demo (RTL, TCP, collectives) with torch unimportable in every process it
    starts: a sitecustomize on PYTHONPATH blocks it, so a torch import anywhere fails."""
    block = tmp_path / "block"
    block.mkdir()
    # An import hook, not sys.modules['torch'] = None, which scipy reads as a module.
    (block / "sitecustomize.py").write_text(
        "import sys\n"
        "class NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] == 'torch':\n"
        "            raise ModuleNotFoundError(\"No module named 'torch' (blocked)\")\n"
        "sys.meta_path.insert(0, NoTorch())\n")
    env = {**__import__("os").environ, "PYTHONPATH": str(block)}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=env, capture_output=True)
    assert probe.returncode != 0          # the block works
    out = subprocess.run(
        [sys.executable, "-m", "inceptionn", "demo", "--steps", "60", "--max-frames", "30",
         "--k", "10", "--out", str(tmp_path / "demo"), "--cache", str(tmp_path / "cache")],
        env=env, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert "checksums valid: True" in out.stdout
    assert "5. RTL: the Verilated TX and RX engines ran" in out.stdout

