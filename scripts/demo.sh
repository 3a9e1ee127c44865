#!/usr/bin/env bash
# The README's first command: build vmscope and run its built-in demo (a simulated noisy
# neighbour preempting a busy guest), which needs no trace file.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh build
[ -f build/build.ninja ] || meson setup build -Dtests=false >/dev/null
ninja -C build tools/vmscope/vmscope >/dev/null
exec build/tools/vmscope/vmscope demo "$@"
