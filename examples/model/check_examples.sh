#!/usr/bin/env bash
# Trains a digits model with edgetrain, then loads it in Python and in C++: both
# must classify every digit alike, as well as the model learned to.
#   check_examples.sh BIN_DIR
set -euo pipefail
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
data_dir="${EDGETRAIN_DATA_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/edgetrain/datasets}"
digits="$data_dir/digits/digits.csv.gz"

for job in digits.yaml; do  # a cnn
  "$bin/edgetrain" run "$here/../$job" --output "$out/model" --no-curves >/dev/null
done
mlp="$out/mlp.yaml"
cat >"$mlp" <<'YAML'
apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: digits-mlp}
spec:
  model: {name: mlp, hidden: [64, 32]}
  data: {dataset: digits}
  optimizer: {name: adam, learningRate: 0.01}
  budget: {epochs: 10}
YAML
"$bin/edgetrain" run "$mlp" --output "$out/mlp" --no-curves >/dev/null
vgg="$out/vgg.yaml"  # pools after every second conv, not after each
cat >"$vgg" <<'YAML'
apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: digits-vgg}
spec:
  model: {name: vgg, widths: [16, 16, 32, 32]}
  data: {dataset: digits, batchSize: 32}
  optimizer: {name: adam, learningRate: 0.003}
  budget: {epochs: 10}
YAML
"$bin/edgetrain" run "$vgg" --output "$out/vgg" --no-curves >/dev/null

for model in "$out/model/model.pt" "$out/mlp/model.pt" "$out/vgg/model.pt"; do
  python=$(/usr/bin/python3 "$here/load_model.py" "$model" "$digits")
  cxx=$("$bin/load-model" "$model" "$digits")
  echo "python: $python"
  echo "c++:    $cxx"
  [[ "$python" == "$cxx" ]] || { echo "Python and C++ disagree on $model" >&2; exit 1; }
  accuracy=$(awk '{print $2}' <<<"$python")
  awk -v a="$accuracy" 'BEGIN { exit !(a > 0.9) }' || { echo "accuracy $accuracy: not the trained model" >&2; exit 1; }
done
