"""A Kubernetes API server stand-in for tests: see tests/kube/README.md."""
