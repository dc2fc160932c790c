#!/usr/bin/env bash
# The text guard's encoder with its top layers fine-tuned (src/guard/text/finetune.py), into
# .cache/guard/mpnet/. The tuning takes half an hour or more on two cores, and its result depends
# only on its inputs, so it is kept in a cache outside the checkout (SERVICE_BUILD_CACHE, by default
# ~/.cache/chat-completion-service), named by the SHA-256 of every input: a fresh clone on a machine
# that has tuned the same inputs before copies it instead of tuning again; any change to an input
# tunes anew. Delete the folder to force a tuning.
# Usage: scripts/tune-guard-encoder.sh JSONL... (the labelled sets: Makefile, GUARD_SETS).
set -euo pipefail
cd "$(dirname "$0")/.."
base=.cache/guard/mpnet-base
out=.cache/guard/mpnet
[ $# -gt 0 ] || { echo "usage: $0 JSONL..." >&2; exit 2; }
inputs=("$@" src/guard/text/requirements.txt
        src/guard/text/{finetune,build_encoder,tuning_data,heads,mpnet}.py "$base/model.safetensors" "$base/tokenizer.json")
key=$(sha256sum "${inputs[@]}" | sha256sum | cut -c1-32)
cache="${SERVICE_BUILD_CACHE:-$HOME/.cache/chat-completion-service}/guard-encoder-$key"
rm -rf "$out" && mkdir -p "$out"
cp "$base/tokenizer.json" "$base/README.md" "$out/"
if [ -s "$cache/encoder.onnx" ] && [ -s "$cache/embeddings.npz" ]; then
  echo "the fine-tuned encoder for these inputs is in $cache: copied, not tuned again"
  cp "$cache/embeddings.npz" "$cache/encoder.onnx" "$out/"
  exit 0
fi
echo "==> fine-tuning the text guard's encoder (half an hour or more on two cores; once per change to its inputs)"
rm -rf "$out.tuning"
.venv-guard/bin/python src/guard/text/finetune.py "$base" "$out.tuning" "$@"
mv "$out.tuning"/* "$out/" && rmdir "$out.tuning"
mkdir -p "$cache.partial" && cp "$out/embeddings.npz" "$out/encoder.onnx" "$cache.partial/" && rm -rf "$cache" && mv "$cache.partial" "$cache"
