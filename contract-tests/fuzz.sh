#!/usr/bin/env bash
# usage: fuzz.sh BASE_URL API_KEY [MAX_EXAMPLES]
# Schemathesis against any implementation at BASE_URL (ending in /v1), with every check, a key,
# and a bounded number of cases per phase so the run stays within minutes on a real model.
set -euo pipefail
base_url=$1 key=$2 examples=${3:-40}
here=$(cd "$(dirname "$0")" && pwd)
st="$here/../.venv/bin/st"
cd "$here/.."
mkdir -p .cache/schemathesis
SCHEMATHESIS_HOOKS=schemathesis_hooks PYTHONPATH="$here" exec "$st" run openapi.yaml \
  --url "$base_url" \
  --header "Authorization: Bearer $key" \
  --checks all \
  --max-examples "$examples" \
  --seed 20261121 \
  --workers 1 \
  --request-timeout 120 \
  --report junit --report-dir .cache/schemathesis \
  --suppress-health-check too_slow
