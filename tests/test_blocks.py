"""The block registry (inceptionn/rtl/blocks.py) names every hw module: each is a block with a
testbench or a formal check that exists, or a support module that says where it is
exercised. The commands and harnesses read their designs from it."""

import importlib
from pathlib import Path

from inceptionn.rtl import blocks

REPO = Path(__file__).resolve().parent.parent
HW = REPO / "hw"


def _hw_modules():
    out = set()
    for path in HW.rglob("*.py"):
        rel = path.relative_to(HW).with_suffix("")
        if path.name == "__init__.py" or rel.parts[0] == "corundum" and rel.parts[1] == "tb":
            continue             # package markers; Corundum's own testbench files
        out.add(".".join(rel.parts))
    return out


def test_every_hw_module_is_a_block_or_support():
    named = {b.module for b in blocks.BLOCKS} | set(blocks.SUPPORT)
    missing = sorted(_hw_modules() - named)
    assert not missing, f"hw modules in no row of inceptionn/rtl/blocks.py: {missing}"
    stale = sorted(named - _hw_modules())
    assert not stale, f"rows of inceptionn/rtl/blocks.py naming no hw module: {stale}"


def test_every_block_is_tested_by_files_that_exist():
    for b in blocks.BLOCKS:
        assert b.testbench or b.formal, f"{b.name}: neither a testbench nor a formal check"
        for f in (*b.testbench, *b.formal):
            assert (REPO / f).is_file(), f"{b.name}: {f} does not exist"


def test_every_block_class_exists_and_names_are_unique():
    names = [b.name for b in blocks.BLOCKS]
    assert len(names) == len(set(names))
    for b in blocks.BLOCKS:
        mod = importlib.import_module(f"inceptionn.hw.{b.module}")
        assert hasattr(mod, b.cls), f"{b.name}: inceptionn.hw.{b.module} has no {b.cls}"


def test_the_commands_read_the_registry():
    from inceptionn.rtl import synthesis as synth
    from inceptionn.rtl import designs
    rows = {d[0] for d in synth.DESIGNS}
    assert {b.name for b in blocks.BLOCKS if b.synth} <= rows
    assert designs.DESIGNS["tx"][0] == blocks.engines()["tx"].name
    assert designs.DESIGNS["rx"][0] == blocks.engines()["rx"].name
