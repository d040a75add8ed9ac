"""Long run of real TCP through the Verilated engines in the software NIC (`make
sim-stress`): 32 MB of real gradients at MTU 1500 and 9000, a lossy wire included,
every frame checked against the golden model by the bridge itself. `make test` runs
2 MB (tests/test_bridge.py)."""

import os

import numpy as np
import pytest

from inceptionn import golden, gradients
from inceptionn.drivers.bridge import Bridge
from inceptionn.drivers.netns import netns_available
from inceptionn.drivers.nic_stream import stream_floats

_why = netns_available()
pytestmark = [
    pytest.mark.skipif(_why is not None, reason=f"no network namespaces: {_why}"),
    pytest.mark.skipif(os.environ.get("INCEPTIONN_STRESS", "0") in ("", "0"),
                       reason="32 MB through the RTL engines; run by `make sim-stress`"),
]


@pytest.mark.parametrize("mtu, drop", [(1500, 0.0), (9000, 0.0), (9000, 0.005)])
def test_32mb_through_the_rtl_engines(mtu, drop):
    x = np.resize(gradients.real_gradients(quiet=True).all(), (32 << 20) // 4)
    with Bridge(2, mtu=mtu, k=10, engine="rtl", drop=drop, seed=3) as br:
        res = stream_floats(br, 0, 1, x, timeout=600)
        c = br.counters()
    assert np.array_equal(res.received.view(np.uint32), golden.roundtrip(x, 10).view(np.uint32))
    assert c[0]["misaligned"] == 0 and c[0]["rtl_tx_frames"] == c[0]["from_host_frames"]
    print(f"MTU {mtu}, drop {drop}: {res.goodput_gbps():.3f} Gb/s through the RTL engines")
