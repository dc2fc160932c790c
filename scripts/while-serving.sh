#!/usr/bin/env bash
# usage: while-serving.sh URL 'SERVER COMMAND' COMMAND...
# Starts the server in the background, waits until URL answers any HTTP status, runs COMMAND,
# stops the server and exits with COMMAND's status. The server's log goes to .cache/. The server
# runs in a process group of its own, and the whole group is stopped: a server started through a
# launcher (npx prism …) would otherwise outlive it.
set -euo pipefail
url=$1 server=$2
shift 2
mkdir -p .cache
# A port another process already serves would pass the wait below, and COMMAND would grade that
# process instead (the mock's Prism once answered for LiteLLM on 4011).
if [ "$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url" || true)" != "000" ]; then
  echo "something already answers $url: its port is taken, so the server would not be the one answering" >&2
  exit 1
fi
log=".cache/server-$(date +%s%N).log"
setsid bash -c "$server" >"$log" 2>&1 &
pid=$!
trap 'kill -- -$pid 2>/dev/null || kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url" || true)
  [ "$code" != "000" ] && break
  if ! kill -0 $pid 2>/dev/null; then echo "server exited early; its log:" >&2; cat "$log" >&2; exit 1; fi
  sleep 0.5
done
[ "$code" != "000" ] || { echo "server did not answer $url in time; its log:" >&2; cat "$log" >&2; exit 1; }
"$@"
