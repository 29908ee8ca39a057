"""Cluster profiles (docs/cluster-profiles.md), read as the C++ reader reads them: checked
and defaulted against api/cluster-profile.schema.yaml, the one schema of the format, with
every link's trace read and checked (api/cluster_profile.cc does the same)."""

import math
import os

import yaml

from apiserver.schema import StructuralSchema

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
SCHEMA_PATH = os.path.join(REPO_ROOT, "api", "cluster-profile.schema.yaml")


class ProfileError(Exception):
    pass


def load_profile(path):
    """The profile's nodes as dicts with every default filled in; link traces become
    absolute paths. Raises ProfileError naming the field."""
    with open(SCHEMA_PATH) as f:
        schema = StructuralSchema(yaml.safe_load(f))
    try:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        raise ProfileError(f"{path}: {e}")
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ProfileError(f"{path}: expected one ClusterProfile")
    doc = docs[0]
    unknown = schema.prune(doc)
    if unknown:
        raise ProfileError(f"{path}: {unknown[0]}: unknown field")
    schema.default(doc)
    errors = schema.validate(doc)
    if errors:
        raise ProfileError(f"{path} is not a valid ClusterProfile: {errors[0].message()}")
    base = os.path.dirname(os.path.abspath(path))
    for node in doc["spec"]["nodes"]:
        link = node.get("link")
        if link:
            link["trace"] = os.path.normpath(os.path.join(base, link["trace"]))
            if not os.path.isfile(link["trace"]):
                raise ProfileError(f"{path}: node {node['name']}: cannot read {link['trace']}")
            try:
                _trace_area(link["trace"])
            except ValueError as e:
                raise ProfileError(f"{path}: node {node['name']}: {e}")
    return doc


def link_mean_mbps(node):
    """What the site publishes as the node's edgetrain.dev/link-mbps: its trace's mean
    times its scale, the number `edgetrain plan` places by (LinkSpec.mean_mbps). None for
    a node without a link: wired, and a site measures only its wireless links."""
    link = node.get("link")
    if not link:
        return None
    # As api/cluster_profile.cc: the mean of the trace scaled, area / period * scale.
    area, period = _trace_area(link["trace"])
    return area / period * link["scale"]


_areas = {}


def _trace_area(path):
    """(Mbit/s x seconds over one period, the period) of a trace, read by the rules of
    core/bandwidth_trace.cc and summed in its order, so that the mean is the very double
    the C++ computes. Each file is read once."""
    if path in _areas:
        return _areas[path]
    name = os.path.basename(path)
    points = []
    # utf-8-sig: a byte-order mark before the header is read past, as edgetrain
    # reads it (it was refused here alone: a user's trial).
    with open(path, encoding="utf-8-sig") as f:
        lines = [(n, line.strip()) for n, line in enumerate(f, 1) if line.strip()]
    if not lines or lines[0][1] != "seconds,mbps":
        raise ValueError(f'{name}: expected the header "seconds,mbps"')
    for n, line in lines[1:]:
        fields = line.split(",")
        try:
            seconds, mbps = (float(x) for x in fields)
        except ValueError:
            raise ValueError(f'{name}:{n}: expected two numbers "seconds,mbps", got "{line}"')
        if not (math.isfinite(seconds) and math.isfinite(mbps)) or mbps < 0:
            raise ValueError(f"{name}:{n}: mbps must be a number >= 0")
        if (not points and seconds != 0) or (points and seconds <= points[-1][0]):
            raise ValueError(f"{name}:{n}: the first sample is at 0 s, and seconds increase")
        points.append((seconds, mbps))
    if not points:
        raise ValueError(f"{name}: the trace has a header but no samples")
    last_step = points[-1][0] - points[-2][0] if len(points) > 1 else 1.0
    period = points[-1][0] + last_step
    area = 0.0
    for i, (start, mbps) in enumerate(points):
        end = points[i + 1][0] if i + 1 < len(points) else period
        area += mbps * (end - start)
    _areas[path] = (area, period)
    return area, period
