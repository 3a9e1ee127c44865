#!/usr/bin/env bash
# Installs what vmscope needs on Debian 12, or prints the exact command when not root.
# Usage: scripts/deps.sh [build|test]   (test adds the peers the tests compare against)
set -euo pipefail
what=${1:-build}
pkgs=(gcc meson ninja-build pkg-config libtraceevent-dev libzstd-dev zlib1g-dev
      libxml2-dev libcmocka-dev libsqlite3-dev libcurl4-openssl-dev)
if [ "$what" = test ]; then
  # peers and reference readers used by tests and benchmarks
  pkgs+=(trace-cmd libtracecmd-dev libtracefs-dev babeltrace2 liblttng-ust-dev lttng-tools protobuf-compiler
         python3 xen-utils-common)   # xen-utils-common: xenalyze, the xentrace reference
  # xentrace itself (its --help checks docs/recording.md's command line; Debian's
  # /usr/sbin/xentrace is a wrapper that needs a hypervisor), and setpriv (util-linux) to
  # run a private lttng-sessiond as nobody in that test
  pkgs+=(xen-utils-4.17 util-linux)
  # vmscope db: the sqlite3 program runs docs/fleet.md's SQL; the ClickHouse tests start
  # their own servers (skipped without the package)
  pkgs+=(sqlite3 clickhouse-server clickhouse-client)
  # the HTML report's browser test: headless Chromium driven by playwright-core, which
  # tests/browser/setup.sh installs with npm (a node and npm already on PATH will do)
  pkgs+=(chromium)
  command -v node >/dev/null || pkgs+=(nodejs)
  command -v npm >/dev/null || pkgs+=(npm)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ]; then
  echo "vmscope: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
else
  echo "vmscope: missing packages; run:" >&2
  echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
