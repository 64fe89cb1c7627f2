#!/usr/bin/env bash
# Installs Bun from its npm registry package (the Linux x64 build) into a folder of its own, for the
# suites CI runs on Bun as well as Node: .ci/install-runtime.sh bun, kept under this name.
#
#   .ci/install-bun.sh [DIR]     DIR default: $ETCDKIT_BUN_DIR, else /opt/etcdkit/bun
#
# Prints the binary's path last: DIR/node_modules/@oven/bun-linux-x64/bin/bun.
set -euo pipefail

if [ -n "${1:-}" ]; then export ETCDKIT_BUN_DIR="$1"; fi
exec "$(dirname "$0")/install-runtime.sh" bun
