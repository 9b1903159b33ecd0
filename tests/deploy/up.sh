#!/usr/bin/env bash
# Install what tests/deploy runs beside the Python packages of the test extra: JupyterHub's proxy,
# configurable-http-proxy, from npm (pinned below), into $PI_DEPLOY_TOOLS (default ~/.cache/pi-notebook/deploy).
# Idempotent: an installed proxy is kept. Needs Node >= 18 and npm (the labextension's build needs them too).
# The tests start and stop the hub, the proxy, the servers and the gateway themselves, on free loopback ports.
#
#   bash tests/deploy/up.sh     # ~10 s with a warm npm cache
set -euo pipefail
ROOT=${PI_DEPLOY_TOOLS:-$HOME/.cache/pi-notebook/deploy}
CHP_VERSION=5.3.0
if [ -x "$ROOT/node_modules/.bin/configurable-http-proxy" ] \
  && [ "$(node -p "require('$ROOT/node_modules/configurable-http-proxy/package.json').version")" = "$CHP_VERSION" ]; then
  echo "configurable-http-proxy: already installed in $ROOT"
  exit 0
fi
mkdir -p "$ROOT"
npm install --prefix "$ROOT" --no-audit --no-fund --loglevel=error "configurable-http-proxy@$CHP_VERSION"
echo "configurable-http-proxy: ready ($ROOT/node_modules/.bin/configurable-http-proxy)"
