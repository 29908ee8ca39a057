"""The node emulator: a K3s edge site's nodes beside the API stand-in (tests/kube/README.md).

Kubelets that run pods as local processes, and EMULATIONS of the controllers a real
cluster runs (node lifecycle, scheduler, endpoints, deployments, service accounts, a
local-path provisioner, pod garbage collection), all acting through the same REST
layer as any client, so every effect is an ordinary watch event."""
