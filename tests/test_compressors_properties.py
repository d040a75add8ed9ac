"""Properties the papers claim: unbiasedness (TernGrad, unbiased random-k), contraction
(top-k, CLT-k), and that error feedback keeps every bit of gradient mass."""


import numpy as np
import pytest

from inceptionn.drivers.collectives import communicator
from inceptionn.drivers.collectives.compressors import collectives, make, topk_indices
from inceptionn.drivers.collectives.compressors.base import scatter


def draws(comp, x, n):
    """n independent compressions of x (one worker, steps 0..n-1), decoded."""
    state, out = comp.init(x.size, seed=7), np.empty((n, x.size))
    for i in range(n):
        payload, state = comp.compress(x, state)
        out[i] = comp.decompress(payload, x.size, state)
        state = comp.finish(state)      # no memory: compress never compensates
    return out


def one_step(comp, g, state):
    """One worker's step through the communicator (compensate, compress, update):
    (what it sent, decoded; the new state)."""
    t = communicator.InProcess(0, 1, None)
    sent, state = communicator.drive(communicator.exchange(comp, g, state, t), t)
    return sent, state


def assert_unbiased(samples, mean, var, spread=True):
    """z-scores of the sample mean: none beyond 5, and (independent coordinates) their
    mean square near 1, so a bias or a wrong variance of a few percent fails."""
    live = var > 0
    z = (samples.mean(axis=0) - mean)[live] / np.sqrt(var[live] / samples.shape[0])
    assert np.abs(z).max() < 5, np.abs(z).max()
    assert not spread or 0.6 < np.mean(z ** 2) < 1.5, np.mean(z ** 2)
    assert np.array_equal(samples.mean(axis=0)[~live], mean[~live])


@pytest.mark.parametrize("clip", [2.5, None])
def test_terngrad_unbiased(clip):
    x = np.random.default_rng(0).normal(0, 1e-2, 96).astype(np.float32)
    comp = make("terngrad", layers=[32, 64], clip=clip)
    g = comp.clip(x).astype(np.float64)
    s = np.repeat(comp.prelude(x, comp.init(x.size)).astype(np.float64), [32, 64])
    samples = draws(comp, x, 3000)
    assert set(np.unique(samples / s)) <= {-1.0, 0.0, 1.0}
    assert_unbiased(samples, g, s * np.abs(g) - g * g)   # Var[s t] = s|g| - g^2


@pytest.mark.parametrize("block", [False, True])
def test_random_k_unbiased_when_scaled(block):
    x = np.random.default_rng(1).normal(0, 1, 80).astype(np.float32)
    comp = make("blockk" if block else "randomk", k=20, scale=True, scope="global")
    samples = draws(comp, x, 3000)
    g = x.astype(np.float64)
    if block:   # a block starts anywhere in 0..60: coordinate i is kept with P(i) below
        p = np.array([min(i, 60) - max(i - 19, 0) + 1 for i in range(80)]) / 61
        # one block's coordinates move together: no spread check
        assert_unbiased(samples, g * p * 4, g * g * 16 * p * (1 - p), spread=False)
    else:
        assert_unbiased(samples, g, g * g * 3)   # Var = g^2 (n/k - 1)


def test_random_k_plain_keeps_k_over_n():
    x = np.random.default_rng(2).normal(0, 1, 80).astype(np.float32)
    samples = draws(make("randomk", k=20), x, 3000)
    g = x.astype(np.float64)
    assert_unbiased(samples, g / 4, g * g * 0.25 * 0.75)


@pytest.mark.parametrize("dist", ["normal", "laplace", "uniform"])
def test_top_k_contraction(dist):
    rng = np.random.default_rng(3)
    for d, k in ((100, 1), (1000, 10), (1000, 500), (37, 37)):
        x = getattr(rng, dist)(size=d).astype(np.float32)
        payload, _ = make("topk", k=k).compress(x, make("topk", k=k).init(d))
        c = make("topk", k=k).decompress(payload, d, None).astype(np.float64)
        xd = x.astype(np.float64)
        assert np.sum((xd - c) ** 2) <= (1 - k / d) * np.sum(xd ** 2)
        assert np.count_nonzero(c) == k and (c[c != 0] == xd[c != 0]).all()


def test_clt_k_leader_contraction_and_rotation():
    rng = np.random.default_rng(4)
    p, d, k = 4, 500, 25
    comp = make("scalecom", k=k)
    states = [comp.init(d, r, p) for r in range(p)]
    for step in range(6):
        g = [rng.laplace(size=d).astype(np.float32) for _ in range(p)]
        xs = [s.compensate(x).astype(np.float64) for s, x in zip(states, g)]
        lead = step % p
        idx = topk_indices(xs[lead].astype(np.float32), k)
        ex = collectives.run(comp, g, states)
        states = ex.states
        assert set(np.flatnonzero(ex.results[0])) <= set(idx)
        x = xs[lead]
        rest = x.copy()
        rest[idx] = 0
        assert np.sum(rest ** 2) <= (1 - k / d) * np.sum(x ** 2)


@pytest.mark.parametrize("name,kw", [("topk", {"k": 30}), ("topk", {"k": 30, "value_k": 8}),
                                     ("randomk", {"k": 0.1, "layers": [100, 200]}),
                                     ("blockk", {"k": 0.1, "shared": False}),
                                     ("scalecom", {"k": 30})])
def test_error_feedback_conserves_mass(name, kw):
    rng = np.random.default_rng(5)
    comp = make(name, **kw)
    state = comp.init(300)
    for _ in range(5):
        g = rng.normal(0, 1e-2, 300).astype(np.float32)
        x = state.compensate(g)
        sent, state = one_step(comp, g, state)
        assert np.array_equal(sent + state.residual(), x)   # bit for bit
        assert np.count_nonzero(sent * state.residual()) == 0 or "value_k" in kw


def test_terngrad_feedback_keeps_what_the_ternary_values_did_not_carry():
    rng = np.random.default_rng(9)
    comp, plain = make("terngrad", layers=[100, 200], feedback=True), make("terngrad")
    assert comp.feedback and not plain.feedback and comp.name == "terngrad_ef"
    state = comp.init(300)
    for _ in range(5):
        g = rng.normal(0, 1e-2, 300).astype(np.float32)
        x = state.compensate(g)
        sent, state = one_step(comp, g, state)
        assert set(np.unique(sent)) - {0} and np.allclose(sent + state.residual(), x,
                                                          rtol=0, atol=1e-7)
    assert np.abs(state.residual()).max() > 1e-3          # the rounding is kept, not lost


def test_scalecom_low_pass_filter():
    rng = np.random.default_rng(6)
    comp = make("scalecom", k=10, beta=0.25)
    state = comp.init(100)
    m = np.zeros(100, np.float32)
    for _ in range(4):
        g = rng.normal(size=100).astype(np.float32)
        x = m + g
        sent, state = one_step(comp, g, state)
        residual = x - sent
        m = np.float32(0.75) * m + np.float32(0.25) * residual   # Eq. (5)
        assert np.array_equal(state.residual(), m)


def test_gtopk_puts_back_what_missed_the_global_set():
    rng = np.random.default_rng(8)
    p, d, k = 4, 200, 10
    comp = make("gtopk", k=k)
    states = [comp.init(d, r, p) for r in range(p)]
    for _ in range(3):
        g = [rng.normal(size=d).astype(np.float32) for _ in range(p)]
        xs = [s.compensate(x) for s, x in zip(states, g)]
        ex = collectives.run(comp, g, states)
        states, glob = ex.states, np.flatnonzero(ex.results[0])
        assert glob.size == k
        for x, s in zip(xs, states):
            mine = np.intersect1d(topk_indices(x, k), glob)
            assert np.array_equal(scatter(mine, x[mine], d) + s.residual(), x)
