"""Every rank's settings compared at setup: a rank configured differently (another error
bound, codec, density, chunk size, or no hook at all) would otherwise train to different
weights while every rank exits 0.

Each rank publishes its settings (a flat dict of JSON values) and reads every other
rank's; every rank then sees the same table and raises the same error, naming each
setting that differs and which ranks hold which value.
"""

from __future__ import annotations

import json

from .links import CollectiveError, _store_get

__all__ = ["SettingsMismatch", "compare_settings", "agree_via_store"]


class SettingsMismatch(CollectiveError, ValueError):
    """The ranks were set up differently."""


def _canon(value):
    return json.loads(json.dumps(value, sort_keys=True))


def compare_settings(by_rank: dict) -> None:
    """Raise SettingsMismatch naming every setting on which the ranks differ."""
    keys = sorted({k for s in by_rank.values() for k in s})
    lines = []
    for key in keys:
        groups: dict = {}
        for rank in sorted(by_rank):
            v = json.dumps(_canon(by_rank[rank].get(key, "<unset>")), sort_keys=True)
            groups.setdefault(v, []).append(rank)
        if len(groups) > 1:
            lines.append(f"{key}: " + "; ".join(
                f"rank{'s' if len(r) > 1 else ''} {','.join(map(str, r))} {v}"
                for v, r in groups.items()))
    if lines:
        raise SettingsMismatch("the ranks' settings differ (every rank must use the same): "
                               + " | ".join(lines))


def agree_via_store(store, prefix: str, rank: int, world: int, settings: dict,
                    timeout: float) -> None:
    """Publish this rank's settings under `prefix` and compare them with every rank's."""
    store.set(f"{prefix}/settings/{rank}", json.dumps(_canon(settings), sort_keys=True))
    by_rank = {rank: settings}
    for r in range(world):
        if r != rank:
            by_rank[r] = json.loads(_store_get(
                store, f"{prefix}/settings/{r}", timeout,
                f"rank {r}'s settings (is the same collective set up on rank {r}?)"))
    compare_settings(by_rank)
