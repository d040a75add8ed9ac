"""A peer of an earlier incarnation of the job (a process left from before torchrun's
elastic restart, which holds the same out-of-band secret) cannot join the restarted
ring: the handshake proves a key bound to the rendezvous prefix, which carries the
restart count. The real peer of the new incarnation still forms the ring."""

import threading

from test_fuzz_ring_listener import _Delta, _Store

from inceptionn.drivers.collectives.transports import links as T

SECRET = b"shared out of band"
OLD, NEW = "inceptionn/hook/0/0", "inceptionn/hook/1/0"


def _rendezvous(store, rank, prefix, out):
    try:
        out[rank] = T.rendezvous(store, rank, 2, [1 - rank], host="127.0.0.1", prefix=prefix,
                                 compress=False, mss=1460, dscp=10, timeout=6.0,
                                 secret=SECRET)
    except Exception as e:  # collected for the test
        out[rank] = e


def test_a_peer_of_the_old_incarnation_is_refused_and_the_new_one_joins():
    store, out = _Store(), {}
    t = threading.Thread(target=_rendezvous, args=(store, 1, NEW, out), daemon=True)
    t.start()
    store.wait([f"{NEW}/addr/1"], _Delta(30))
    # The stale rank 0 finds the new listener where its incarnation's rank 1 was (a
    # port reused after the restart) and runs its own rendezvous against it.
    store.set(f"{OLD}/addr/1", store.get(f"{NEW}/addr/1"))
    stale: dict = {}
    _rendezvous(store, 0, OLD, stale)
    assert isinstance(stale[0], T.CollectiveError), stale
    assert "cannot prove" in str(stale[0]), stale
    _rendezvous(store, 0, NEW, out)
    t.join(10)
    assert not isinstance(out[0], Exception) and not isinstance(out[1], Exception), out
    out[0][1].send_msg({"step": 1})
    assert out[1][0].recv_msg() == {"step": 1}
    for links in out.values():
        for link in links.values():
            link.close()
