#!/usr/bin/env bash
# usage: run-suites.sh BASE_URL... — the conformance, generation, task, media, guard and hostile-input
# suites against each base URL in turn (SERVICE_API_KEY and SERVICE_CONTEXT_WINDOW from the
# environment), then the conformance kit with this service's extensions, its report in
# .cache/conformance/; stops at a failure. Each test has a time limit (a hang detector).
set -euo pipefail
cd "$(dirname "$0")/.."
n=0
for url in "$@"; do
  echo "== $url"
  SERVICE_BASE_URL=$url node --import tsx --test --test-force-exit --test-timeout=600000 contract-tests/conformance.test.ts contract-tests/generation.test.ts \
    contract-tests/tasks.test.ts contract-tests/media.test.ts contract-tests/guard.test.ts contract-tests/hostile.test.ts
  n=$((n + 1))
  node --import tsx contract-tests/kit/cli.ts --base-url "$url" --api-key "$SERVICE_API_KEY" --extensions --report ".cache/conformance/target-$n"
done
