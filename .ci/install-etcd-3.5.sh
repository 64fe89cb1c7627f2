#!/usr/bin/env bash
# Installs real etcd 3.5 beside the system's etcd (3.4 from Debian stable), for the suites that run
# on every installed etcd version (ETCDKIT_ETCD_BINS): Debian unstable's etcd-server package,
# fetched with apt state of its own (the system's sources, lists and packages stay as they are) and
# unpacked with dpkg-deb into a folder of its own. Quick when that folder already holds 3.5.
#
#   .ci/install-etcd-3.5.sh [DIR]     DIR default: $ETCDKIT_ETCD_35_DIR, else /opt/etcdkit/etcd-3.5
#
# Prints the binary's path and version last: DIR/usr/bin/etcd. Needs write access to DIR's parent
# (root for the default), the Debian mirror the system's apt sources use, apt-get and dpkg-deb.
set -euo pipefail

dir="${1:-${ETCDKIT_ETCD_35_DIR:-/opt/etcdkit/etcd-3.5}}"
binary="$dir/usr/bin/etcd"
want_series="3.5"

installed_version() {
  "$binary" --version 2>/dev/null | sed -n 's/^etcd Version: //p'
}

report() {
  echo "etcd $(installed_version) ($binary)"
}

if [ -x "$binary" ] && [[ "$(installed_version)" == "$want_series".* ]]; then
  report
  exit 0
fi

# Debian's main archive, on the mirror host the system already uses (deb822 `.sources` or one-line
# `.list` entries); the security archive (`.../debian-security`) is not it.
mirror=""
for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
  [ -f "$file" ] || continue
  mirror="$(
    sed -n -e 's/^URIs:[[:space:]]*//p' -e 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?//p' "$file" |
      tr ' ' '\n' | grep -E '^https?://[^ ]+/debian/?$' | head -n 1 || true
  )"
  [ -n "$mirror" ] && break
done
if [ -z "$mirror" ]; then
  echo "no Debian archive (a URI ending in /debian) in /etc/apt/sources.list*: cannot fetch etcd 3.5" >&2
  exit 1
fi
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# apt state of our own, thrown away afterwards: only the install folder is kept.
state="$(mktemp -d)"
partial="$dir.partial.$$"
trap 'rm -rf "$state" "$partial"' EXIT
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/sourceparts"
echo "deb [signed-by=$keyring] ${mirror%/} sid main" >"$state/sources.list"
apt_options=(
  -o "Dir::Etc::sourcelist=$state/sources.list"
  -o "Dir::Etc::sourceparts=-"
  -o "Dir::State::Lists=$state/lists"
  -o "Dir::Cache=$state/cache"
  -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache="
  -o "Debug::NoLocking=1"
)
# As root apt downloads as the `_apt` user, who cannot write into a private temp dir.
if [ "$(id -u)" -eq 0 ]; then apt_options+=(-o "APT::Sandbox::User=root"); fi

echo "fetching the package lists of Debian sid (main) from ${mirror%/}"
apt-get "${apt_options[@]}" -qq update

# The newest 3.5.x sid offers (sid may move on to 3.6: then this fails and says so).
version="$(
  apt-cache "${apt_options[@]}" madison etcd-server | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' |
    grep -E "^([0-9]+:)?${want_series//./\\.}\." | sort -V | tail -n 1 || true
)"
if [ -z "$version" ]; then
  echo "Debian sid offers no etcd-server $want_series.x (it offers: $(
    apt-cache "${apt_options[@]}" madison etcd-server | awk -F'|' '{ print $2 }' | tr -d ' ' | paste -sd ' '
  ))" >&2
  exit 1
fi

echo "downloading etcd-server $version"
(cd "$state" && apt-get "${apt_options[@]}" -qq download "etcd-server=$version")
mkdir -p "$(dirname "$dir")"
rm -rf "$partial"
dpkg-deb -x "$state"/etcd-server_*.deb "$partial"
rm -rf "$dir"
mv "$partial" "$dir"
report
