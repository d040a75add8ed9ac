"""TagDecoder: every one of the 65536 tag words against golden.tag_decoder."""

import cocotb
from cocotb.triggers import Timer

from inceptionn import golden
from inceptionn.rtl import harness

import pytest

# make test runs the engines' testbenches, which hold this stage (every frame against
# golden); this one runs in make sim and make test-long (which CI runs after make
# test), so that make test keeps within its 8 minutes on a fresh 2-core machine.
pytestmark = pytest.mark.long

DUT = "tag_decoder"


def _design():
    from inceptionn.hw.tag_decoder import TagDecoder
    return TagDecoder()


@cocotb.test()
async def all_tag_words(dut):
    mismatches = []
    for word in range(1 << 16):
        dut.tags.value = word
        await Timer(1, unit="ns")
        widths, offsets, length = golden.tag_decoder(word)
        w, o = int(dut.width.value), int(dut.offset.value)
        got = ([(w >> (3 * j)) & 7 for j in range(8)],
               [(o >> (6 * j)) & 63 for j in range(8)],
               int(dut.length.value))
        if got != (widths, offsets, length):
            mismatches.append((word, got, (widths, offsets, length)))
    assert not mismatches, f"{len(mismatches)} tag words differ, first: {mismatches[:3]}"


def test_tag_decoder():
    harness.run(_design, DUT, "inceptionn.sim.test_tag_decoder")
