"""Every delay of the emulated cluster, as flags of `standin` with Kubernetes' defaults;
tests pass short ones (tests/kube/README.md lists them)."""

from dataclasses import dataclass


@dataclass
class Timings:
    # kubelet: lease renewal and node status (--node-status-update-frequency); the
    # lease's leaseDurationSeconds is 4 heartbeats, as a kubelet's 40 s to 10 s
    heartbeat: float = 10.0
    # node lifecycle controller: a node whose lease is older than this is NotReady
    # (kube-controller-manager --node-monitor-grace-period)
    node_monitor_grace: float = 40.0
    # what every pod tolerates of not-ready/unreachable unless it says otherwise
    # (kube-apiserver --default-not-ready-toleration-seconds, ...-unreachable-...)
    default_toleration: int = 300
    # restart back-off: doubles from base to max, reset after max of running well
    backoff_base: float = 10.0
    backoff_max: float = 300.0
    # how often controllers look again at what only time changes
    resync: float = 1.0
