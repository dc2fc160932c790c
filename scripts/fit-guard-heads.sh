#!/usr/bin/env bash
# The text guard's heads, fitted by guard_worker.py train into OUT (the encoder it reads is mpnet/
# beside OUT). A fit takes ten minutes or so on two cores and, on one machine, its result depends
# only on its inputs, so like the tuned encoder (tune-guard-encoder.sh) it is kept in the build
# cache (SERVICE_BUILD_CACHE, by default ~/.cache/chat-completion-service) under the SHA-256 of
# every input: the encoder, the guard's Python and its requirements, each file named in the
# arguments and the arguments themselves (the same set as a heads-only set is another fit).
# Usage: scripts/fit-guard-heads.sh OUT ARGUMENTS... (guard_worker.py train's, after OUT).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1
shift
files=()
for argument in "$@"; do [ -f "$argument" ] && files+=("$argument"); done
inputs=("${files[@]}" "$(dirname "$out")"/mpnet/* src/guard/text/*.py src/guard/text/requirements.txt)
key=$({ sha256sum "${inputs[@]}" | cut -d" " -f1; printf '%s\n' "$@"; } | sha256sum | cut -c1-32)
cache="${SERVICE_BUILD_CACHE:-$HOME/.cache/chat-completion-service}/guard-heads-$key"
if [ -s "$cache/heads.json" ]; then
  echo "the guard's heads for these inputs are in $cache: copied, not fitted again"
  cp "$cache/heads.json" "$out"
  exit 0
fi
.venv-guard/bin/python src/guard/text/guard_worker.py train "$out.partial" "$@"
mkdir -p "$cache.partial" && cp "$out.partial" "$cache.partial/heads.json" && rm -rf "$cache" && mv "$cache.partial" "$cache"
mv "$out.partial" "$out"
