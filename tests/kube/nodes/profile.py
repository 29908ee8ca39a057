"""Cluster profiles (docs/cluster-profiles.md), read as the C++ reader reads them: checked
and defaulted against api/cluster-profile.schema.yaml, the one schema of the format."""

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
    return doc
