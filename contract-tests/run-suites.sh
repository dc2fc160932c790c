#!/usr/bin/env bash
# usage: run-suites.sh BASE_URL... — the conformance, generation, task and hostile-input suites against each base URL
# in turn (SERVICE_API_KEY and SERVICE_CONTEXT_WINDOW from the environment); stops at a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
for url in "$@"; do
  echo "== $url"
  SERVICE_BASE_URL=$url node --import tsx --test contract-tests/conformance.test.ts contract-tests/generation.test.ts contract-tests/tasks.test.ts contract-tests/guard.test.ts contract-tests/hostile.test.ts
done
