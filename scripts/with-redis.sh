#!/usr/bin/env bash
# Runs a command against a throwaway Redis: scripts/with-redis.sh PORT COMMAND...
# Starts redis-server on 127.0.0.1:PORT with nothing persisted (its working directory is a temp
# dir, never the work tree), waits until it answers, runs COMMAND with REDIS_URL exported, stops
# Redis however COMMAND ends, and exits with COMMAND's status.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 PORT COMMAND..." >&2
  exit 2
fi
port=$1
shift
command -v redis-server >/dev/null || { echo "redis-server is missing: run scripts/install-system-packages.sh" >&2; exit 1; }
if redis-cli -p "$port" ping >/dev/null 2>&1; then
  echo "something already answers on port $port; refusing to use it" >&2
  exit 1
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/with-redis.XXXXXX")
redis_pid=
stop() {
  if [ -n "$redis_pid" ] && kill -0 "$redis_pid" 2>/dev/null; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$dir" \
  --logfile "$dir/redis.log" --daemonize no &
redis_pid=$!

for _ in $(seq 1 100); do
  [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
  kill -0 "$redis_pid" 2>/dev/null || { cat "$dir/redis.log" >&2; echo "redis-server did not start" >&2; exit 1; }
  sleep 0.1
done
[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] || { echo "redis-server on port $port did not answer PING" >&2; exit 1; }

export REDIS_URL="redis://127.0.0.1:$port"
status=0
"$@" || status=$?
exit "$status"
