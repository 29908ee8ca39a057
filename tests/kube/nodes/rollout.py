"""The arithmetic of a Deployment's rolling update, as the real controller does it
(pkg/controller/deployment/rolling.go and util/deployment_util.go), on ReplicaSets as the
API holds them:

- maxSurge and maxUnavailable resolve against replicas (a percentage: surge rounded up,
  unavailable down); both 0 would never move, so unavailable becomes 1;
- the new ReplicaSet grows while the replicas of all ReplicaSets together stay within
  replicas + maxSurge;
- old ReplicaSets shrink while the available pods stay at least replicas -
  maxUnavailable: first their pods that are not available (nothing lost), then the
  oldest ReplicaSets first, by what the available pods exceed that minimum."""

import math


def _resolve(value, total, round_up):
    if isinstance(value, int):
        return value
    text = str(value)
    if text.endswith("%"):
        scaled = float(text[:-1]) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    return int(text)


def max_surge_and_unavailable(d):
    """(maxSurge, maxUnavailable) as numbers of pods; (0, 0) for Recreate."""
    strategy = d["spec"].get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    replicas = d["spec"].get("replicas", 1)
    surge = _resolve(rolling.get("maxSurge", "25%"), replicas, True)
    unavailable = _resolve(rolling.get("maxUnavailable", "25%"), replicas, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, min(unavailable, replicas)


def _spec(rs):
    return rs["spec"].get("replicas", 0)


def _available(rs):
    return (rs.get("status") or {}).get("availableReplicas", 0)


def new_replicas(d, new, old):
    """The replicas the new ReplicaSet should have now."""
    replicas = d["spec"].get("replicas", 1)
    if _spec(new) >= replicas:
        return replicas
    surge, _ = max_surge_and_unavailable(d)
    room = replicas + surge - sum(_spec(rs) for rs in old + [new])
    if room <= 0:
        return _spec(new)
    return _spec(new) + min(room, replicas - _spec(new))


def old_scale_downs(d, new, old):
    """[(old ReplicaSet, its new replicas)] for this step."""
    if not sum(_spec(rs) for rs in old):
        return []
    replicas = d["spec"].get("replicas", 1)
    _, unavailable = max_surge_and_unavailable(d)
    min_available = replicas - unavailable
    everyone = sum(_spec(rs) for rs in old + [new])
    new_unavailable = _spec(new) - _available(new)
    budget = everyone - min_available - new_unavailable
    if budget <= 0:
        return []
    oldest_first = sorted(old, key=lambda rs: rs["metadata"]["creationTimestamp"])
    target = {rs["metadata"]["uid"]: _spec(rs) for rs in old}
    for rs in oldest_first:  # pods that are not available go first: nothing is lost
        if budget <= 0:
            break
        unhealthy = target[rs["metadata"]["uid"]] - _available(rs)
        if unhealthy > 0:
            cut = min(budget, unhealthy)
            target[rs["metadata"]["uid"]] -= cut
            budget -= cut
    available = sum(_available(rs) for rs in old + [new])
    excess = available - min_available
    for rs in oldest_first:
        if excess <= 0:
            break
        cut = min(target[rs["metadata"]["uid"]], excess)
        target[rs["metadata"]["uid"]] -= cut
        excess -= cut
    return [(rs, target[rs["metadata"]["uid"]]) for rs in oldest_first
            if target[rs["metadata"]["uid"]] != _spec(rs)]
