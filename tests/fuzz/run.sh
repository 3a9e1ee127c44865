#!/bin/sh
# Build the libFuzzer targets with clang and run each for SECONDS (see README.md):
#   tests/fuzz/run.sh SECONDS [FORMAT...]      FORMAT: tracedat tcxml simpletrace ctf xentrace (default all)
# Build directory: $BUILD (default build-fuzz beside the sources). The corpus grows in
# BUILD/fuzz-work/FORMAT (kept between runs), crashes go to BUILD/fuzz-artifacts/FORMAT/, the
# log of each run to BUILD/fuzz-artifacts/FORMAT.log. A crash input, once fixed, belongs in
# tests/fuzz/regress/FORMAT/ (replayed by `meson test --suite fuzz`).
set -eu
secs=${1:?usage: run.sh SECONDS [FORMAT...]}
shift
formats=${*:-tracedat tcxml simpletrace ctf xentrace}
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$src/build-fuzz}
jobs=${JOBS:-2}

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" "$src" -Dfuzz=true -Db_sanitize=address,undefined \
		-Db_lundef=false
fi
targets="tools/vmscope/vmscope examples/vmm-demo"
for f in $formats; do targets="$targets tests/fuzz/fuzz_$f"; done
ninja -C "$build" -j"$jobs" $targets
[ -d "$build/fuzz-corpus" ] || "$src/tests/fuzz/make-corpus.sh" "$build"

export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for f in $formats; do
	case $f in
	tracedat) opts="-max_len=262144" ;;
	tcxml) opts="-max_len=16384 -dict=$src/tests/fuzz/tcxml.dict" ;;
	simpletrace) opts="-max_len=32768" ;;
	ctf) opts="-max_len=32768 -dict=$src/tests/fuzz/ctf.dict" ;;
	xentrace) opts="-max_len=65536" ;;
	*) echo "run.sh: unknown format $f" >&2; exit 2 ;;
	esac
	mkdir -p "$build/fuzz-work/$f" "$build/fuzz-artifacts/$f"
	echo "run.sh: fuzzing $f for $secs s"
	# shellcheck disable=SC2086
	if ! "$build/tests/fuzz/fuzz_$f" $opts -max_total_time="$secs" -rss_limit_mb=2048 \
		-timeout=10 -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$f/" \
		"$build/fuzz-work/$f" "$build/fuzz-corpus/$f" >"$build/fuzz-artifacts/$f.log" 2>&1; then
		echo "run.sh: $f FOUND A PROBLEM: see $build/fuzz-artifacts/$f.log" >&2
		status=1
	fi
	grep -E '^#[0-9]+[[:space:]]+DONE|stat::' "$build/fuzz-artifacts/$f.log" || true
done
exit $status
