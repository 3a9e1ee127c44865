#!/usr/bin/env bash
# The README's second command: install what is missing, build under AddressSanitizer and
# UndefinedBehaviorSanitizer, run every test, end with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh test || exit 1
dir=build-test
if [ ! -f $dir/build.ninja ]; then
  meson setup $dir -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug >/dev/null || exit 1
fi
ninja -C $dir || exit 1
meson test -C $dir --print-errorlogs --num-processes 2 --timeout-multiplier 3 > $dir/test-output.txt 2>&1
rc=$?
cat $dir/test-output.txt
python3 scripts/test-summary.py $dir/meson-logs/testlog.json || exit 1
exit $rc
