#!/usr/bin/env bash
# Installs the browser test's harness (playwright-core, pinned in package-lock.json) into
# tests/browser/node_modules with npm; only for this test, never shipped. Debian's chromium,
# nodejs and npm come from scripts/deps.sh test. Exit 0 when the harness is there.
set -euo pipefail
cd "$(dirname "$0")"
[ -f node_modules/playwright-core/package.json ] && exit 0
command -v npm >/dev/null || { echo "tests/browser: npm missing (apt-get install npm)" >&2; exit 1; }
npm ci --no-audit --no-fund --loglevel=error >&2
