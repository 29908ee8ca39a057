"""The image table (tests/kube/images.yaml): an image reference to what a container of it
runs. Nothing is pulled; a reference no entry names fails like a pull from nowhere."""

import fnmatch
import os

import yaml


class Image:
    def __init__(self, ref, entrypoint, cmd, files, env):
        self.ref, self.entrypoint, self.cmd, self.files, self.env = ref, entrypoint, cmd, files, env


class PullError(Exception):
    """Why an image cannot be had (the container waits with reason ErrImagePull)."""


def _repository(ref):
    """`registry.example:5000/edgetrain/agent:1` -> `edgetrain/agent:1`; a first component
    with a dot or a colon, or `localhost`, is a registry host."""
    first, _, rest = ref.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return rest
    return ref


class ImageTable:
    def __init__(self, path, build_dir, data_dir):
        with open(path) as f:
            self.entries = yaml.safe_load(f)["images"]
        self.path, self.build_dir, self.data_dir = path, build_dir, data_dir

    def resolve(self, ref):
        repo = _repository(ref or "")
        if ":" not in repo.rsplit("/", 1)[-1] and "@" not in repo:
            repo += ":latest"
        for e in self.entries:
            if fnmatch.fnmatchcase(repo, e["pattern"]):
                files = {}
                for target, source in (e.get("files") or {}).items():
                    source = source.replace("${BUILD}", self.build_dir) \
                                   .replace("${DATA}", self.data_dir)
                    if not os.path.exists(source):
                        raise PullError(f'failed to pull image "{ref}": {source} does not exist '
                                        f"(build it first; see {self.path})")
                    files[target] = source
                return Image(ref, e.get("entrypoint") or [], e.get("cmd") or [], files,
                             dict(e.get("env") or {}))
        raise PullError(f'failed to pull and unpack image "{ref}": failed to resolve reference '
                        f'"{ref}": not found in the node emulator\'s image table ({self.path})')
