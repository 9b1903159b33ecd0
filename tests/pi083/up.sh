#!/usr/bin/env bash
# Install Pi 0.83 for the Pi interop tests (tests/session/test_store_pi_interop.py: our session files load in Pi's
# own SessionManager) into $PI083_DIR (default ~/.cache/pi-notebook/pi083): @earendil-works/pi-coding-agent,
# pi-agent-core and pi-ai 0.83.0, and Node 22 from npm's `node` package (pi-coding-agent needs Node >= 22.19;
# it lands in node_modules/.bin/node), exact versions in package-lock.json beside this script. Needs npm (any
# Node) and the npm registry; ~1 min, 360 MB. Idempotent: an install of the same lock file is kept.
#
#   bash tests/pi083/up.sh
set -euo pipefail
DIR=${PI083_DIR:-$HOME/.cache/pi-notebook/pi083}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$DIR"
if cmp -s "$HERE/package-lock.json" "$DIR/package-lock.json" && [ -x "$DIR/node_modules/.bin/node" ] \
  && [ -d "$DIR/node_modules/@earendil-works/pi-coding-agent" ]; then
  echo "pi 0.83: already installed in $DIR"
  exit 0
fi
cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
echo "pi 0.83: ready in $DIR (node $("$DIR/node_modules/.bin/node" --version))"
