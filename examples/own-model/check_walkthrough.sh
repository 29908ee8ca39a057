#!/usr/bin/env bash
# Runs every command of docs/own-model.md as written, from a stand-in for the
# repository's root, and checks what the page says of them: PyTorch's accuracy
# on the trained module is the run's. Then the other half of the issue's
# claim: a TorchScript module trains as the built-in mlp of its shape does,
# alone and as a team of 3.
#   check_walkthrough.sh BIN_DIR
set -euo pipefail
bin=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
page="$repo/docs/own-model.md"
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/build"
ln -s "$repo/examples" "$root/examples"
ln -s "$bin" "$root/build/bin"

# The page's sh blocks, in order, one script; and its yaml block, the manifest.
awk '/^```sh$/ {on = 1; next} /^```$/ {on = 0} on' "$page" >"$root/walkthrough.sh"
awk '/^```yaml$/ {on = 1; next} /^```$/ {on = 0} on' "$page" >"$root/page.yaml"
[[ $(wc -l <"$root/walkthrough.sh") -ge 5 ]] || { echo "FAIL: too few commands found in $page"; exit 1; }
diff -u "$here/job.yaml" "$root/page.yaml" || { echo "FAIL: the page's manifest is not examples/own-model/job.yaml"; exit 1; }
echo "--- running the $(wc -l <"$root/walkthrough.sh") commands of docs/own-model.md"
(cd "$root" && bash -euo pipefail -x walkthrough.sh) >"$root/out.txt" 2>&1 || { cat "$root/out.txt"; echo "FAIL: a command of the page failed"; exit 1; }
cat "$root/out.txt"

ran=$(grep -oE '^my-model: test accuracy [0-9.]+' "$root/out.txt" | awk '{print $4}')
split=$(grep -oE '^my-model-split: test accuracy [0-9.]+' "$root/out.txt" | awk '{print $4}')
predicted=$(grep -oE '^accuracy [0-9.]+' "$root/out.txt" | awk '{print $2}')
evaluated=$(grep -oE 'model.pt: test accuracy [0-9.]+' "$root/out.txt" | awk '{print $4}')
card=$(/usr/bin/python3 -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["accuracy"])' "$root/my-model/out/model.json")
echo "run: $ran, model.json: $card, PyTorch: $predicted, edgetrain evaluate: $evaluated"
[[ -n "$ran" && "$ran" == "$predicted" && "$card" == "$predicted" && "$evaluated" == "$predicted" ]] ||
  { echo "FAIL: PyTorch's accuracy is not the run's"; exit 1; }
/usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)' "$ran" || { echo "FAIL: accuracy $ran below 0.9"; exit 1; }
# The module cut into two stages over gRPC trains as it does whole.
grep -q "0.Flatten-2.ReLU on gateway; 3.Linear-5.Linear on board-1" "$root/out.txt" ||
  { echo "FAIL: the pipeline's stages are not the page's"; exit 1; }
echo "split into two stages: $split"
/usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.01 else 1)' "$split" "$ran" ||
  { echo "FAIL: the pipeline's accuracy $split is not the whole module's $ran"; exit 1; }

# The same module against the built-in mlp of its shape, same seed, same
# steps: alone and as a team of three.
images="{format: images, train: {path: data/train}, test: {path: data/test}, inputShape: [1, 8, 8], classes: 10, batchSize: 32}"
train() {  # NAME MODEL WORKERS DATA: prints the final test accuracy
  cat >"$root/my-model/$1.yaml" <<YAML
apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: $1}
spec:
  model: $2
  data: $4
  parallelism: {workers: $3}
  optimizer: {name: adam, learningRate: 0.01}
  budget: {epochs: 10}
  seed: 7
YAML
  "$bin/edgetrain" run "$root/my-model/$1.yaml" --output "$root/my-model/$1" --json --no-curves | tail -1 |
    /usr/bin/python3 -c 'import json,sys; print("%.4f" % json.loads(sys.stdin.read())["accuracy"])'
}
for workers in 1 3; do
  own=$(train "own-$workers" "{torchscript: {path: model.pt}}" "$workers" "$images")
  builtin=$(train "builtin-$workers" "{name: mlp, hidden: [64, 32]}" "$workers" "$images")
  echo "workers $workers: TorchScript $own, built-in mlp $builtin"
  /usr/bin/python3 -c 'import sys; a, b = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 0.05 and a >= 0.9 else 1)' \
    "$own" "$builtin" || { echo "FAIL: with $workers worker(s) the module's $own is not the built-in's $builtin within 0.05"; exit 1; }
done
# Each other format, written from the same digits, trains the module too.
for format in csv npy idx; do
  /usr/bin/python3 "$here/digits_as.py" "$format" "$root/my-model/$format" >/dev/null
  case $format in
    csv) files="train: {path: $format/train.csv}, test: {path: $format/test.csv}, inputShape: [64]" ;;
    npy) files="train: {features: $format/train_features.npy, labels: $format/train_labels.npy},
                test: {features: $format/test_features.npy, labels: $format/test_labels.npy}, inputShape: [8, 8]" ;;
    idx) files="train: {features: $format/train-images.idx.gz, labels: $format/train-labels.idx.gz},
                test: {features: $format/test-images.idx.gz, labels: $format/test-labels.idx.gz}, inputShape: [1, 8, 8]" ;;
  esac
  accuracy=$(train "own-$format" "{torchscript: {path: model.pt}}" 1 "{format: $format, $files, classes: 10, batchSize: 32}")
  echo "$format: TorchScript $accuracy"
  /usr/bin/python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 0.9 else 1)' "$accuracy" ||
    { echo "FAIL: $format data trained to $accuracy, below 0.9"; exit 1; }
done
# A bad file is the manifest's fault: exit 2, and the file and line named.
printf 'label,a,b\n1,0.5,0.2\n7,0.1,0.1\n' >"$root/my-model/bad.csv"
cat >"$root/my-model/bad.yaml" <<'YAML'
apiVersion: edgetrain.dev/v1alpha1
kind: TrainingJob
metadata: {name: bad}
spec:
  model: {name: mlp}
  data: {format: csv, train: {path: bad.csv}, test: {path: bad.csv}, inputShape: [2], classes: 3}
YAML
code=0
"$bin/edgetrain" run "$root/my-model/bad.yaml" --output "$root/my-model/bad" --no-curves >"$root/bad.txt" 2>&1 || code=$?
grep -q "error: refused before training: $root/my-model/bad.csv:3: label 7 is out of range \[0, 3)" "$root/bad.txt" && [[ $code == 2 ]] ||
  { cat "$root/bad.txt"; echo "FAIL: a bad data file exited $code, not 2 with its line named"; exit 1; }
echo "PASS"
