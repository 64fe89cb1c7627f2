#!/usr/bin/env bash
# Installs Bun from its npm registry package (the Linux x64 build) into a folder of its own, for the
# suites CI runs on Bun as well as Node. Quick when that folder already holds the wanted version.
#
#   .ci/install-bun.sh [DIR]     DIR default: $ETCDKIT_BUN_DIR, else /opt/etcdkit/bun
#
# Prints the binary's path last: DIR/node_modules/@oven/bun-linux-x64/bin/bun.
set -euo pipefail

version=1.4.5
dir="${1:-${ETCDKIT_BUN_DIR:-/opt/etcdkit/bun}}"
binary="$dir/node_modules/@oven/bun-linux-x64/bin/bun"

if [ ! -x "$binary" ] || [ "$("$binary" --version 2>/dev/null)" != "$version" ]; then
  mkdir -p "$dir"
  # --prefix keeps it out of the project's node_modules and lock file.
  npm install --prefix "$dir" --no-save --no-audit --no-fund "@oven/bun-linux-x64@$version" >&2
fi
echo "bun $("$binary" --version) ($binary)" >&2
echo "$binary"
