#!/usr/bin/env bash
# usage: litellm-proxy.sh install
#        litellm-proxy.sh serve PORT UPSTREAM_BASE_URL UPSTREAM_KEY MASTER_KEY
# LiteLLM's proxy, from PyPI in a throwaway venv (.cache/litellm-venv; not a dependency of the
# project), in front of an OpenAI-compatible server, as model `service` (openai/service): for
# `make kit-table KIT_TABLE_LITELLM=1`. Pinned: 1.109.1 and 1.106.10 need certifi>=2026.10.19,
# which the package index here does not have; 1.100.5 installs on Python 3.11 in about 60 s.
set -euo pipefail
venv=.cache/litellm-venv
version=1.100.5
if ! "$venv/bin/litellm" --version 2>/dev/null | grep -q "$version"; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "litellm[proxy]==$version"
fi
[ "$1" = install ] && exit 0
port=$2 upstream=$3 upstream_key=$4 master_key=$5
mkdir -p .cache/litellm
cat >.cache/litellm/config.yaml <<YAML
model_list:
  - model_name: service
    litellm_params:
      model: openai/service
      api_base: $upstream
      api_key: $upstream_key
general_settings:
  master_key: $master_key
YAML
exec "$venv/bin/litellm" --config .cache/litellm/config.yaml --host 127.0.0.1 --port "$port"
