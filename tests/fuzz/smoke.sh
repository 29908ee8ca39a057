#!/bin/sh
# One fuzz target's smoke run, as make test runs it: from its seed corpus, a
# fixed seed and a fixed number of runs, new inputs kept in a folder of its
# own so the corpus in the repository is never written.
#   smoke.sh FUZZER CORPUS RUNS ARTIFACTS
# A crash, a leak or a timeout fails it, its input kept in ARTIFACTS.
set -eu
fuzzer=$1 corpus=$2 runs=$3 artifacts=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
if ! "$fuzzer" -seed=1 -runs="$runs" -timeout=5 -rss_limit_mb=1024 \
    -artifact_prefix="$artifacts/" "$work" "$corpus" >"$work/log" 2>&1; then
  tail -40 "$work/log"
  echo "FAIL: $(basename "$fuzzer"): its input is in $artifacts"
  exit 1
fi
grep -E '^Done|^#[0-9]+.*DONE' "$work/log" | tail -2
