#!/bin/sh
# Build the libFuzzer targets with clang and run each for SECONDS (see README.md):
#   tests/fuzz/run.sh SECONDS [FORMAT...]      FORMAT: tracedat tcxml simpletrace ctf xentrace (default all)
# Environment:
#   BUILD=DIR      build directory (default build-fuzz beside the sources, build-fuzz-fast for
#                  FLAVOUR=fast)
#   FLAVOUR=fast   ASan only, optimised (-O2, no UBSan): several times the executions per
#                  second, for long runs; the default (ASan+UBSan, debug) is what CI replays
#   NICE=N         run the fuzzers under nice -n N (the machine is shared; default 0)
#   NOBUILD=1      do not set up or rebuild: run the binaries already in BUILD
#   RUNS=N         libFuzzer -runs=N; RUNS=0 only replays the corpora (no mutation)
#   JOBS=N         ninja -j (default 2)
#   VMS_FUZZ_MAX_EVENTS=N   events read per input (default 65,536; see fuzz_harness.c)
#   ASAN_OPTIONS   default malloc_context_size=0 (faster; replay a crash for its full report)
# -reload=0: one fuzzer per corpus directory, so libFuzzer need not list and reread it every
# second (it rereads the units it wrote itself; a tenth of fuzz_tracedat's CPU under load).
# The corpus grows in BUILD/fuzz-work/FORMAT (kept between runs), crashes go to
# BUILD/fuzz-artifacts/FORMAT/, the log of each run to BUILD/fuzz-artifacts/FORMAT.log. A crash
# input, once fixed, belongs in tests/fuzz/regress/FORMAT/ (replayed by `meson test --suite fuzz`).
set -eu
secs=${1:?usage: run.sh SECONDS [FORMAT...]}
shift
formats=${*:-tracedat tcxml simpletrace ctf xentrace}
src=$(cd "$(dirname "$0")/../.." && pwd)
flavour=${FLAVOUR:-}
case $flavour in
'') build=${BUILD:-$src/build-fuzz}; san=address,undefined; btype=debug ;;
fast) build=${BUILD:-$src/build-fuzz-fast}; san=address; btype=release ;;
*) echo "run.sh: unknown FLAVOUR $flavour (fast or nothing)" >&2; exit 2 ;;
esac
jobs=${JOBS:-2}
nice=${NICE:-0}

if [ -z "${NOBUILD:-}" ]; then
	if [ ! -f "$build/build.ninja" ]; then
		CC=clang meson setup "$build" "$src" -Dfuzz=true -Db_sanitize="$san" \
			-Db_lundef=false -Dbuildtype="$btype"
	fi
	targets="tools/vmscope/vmscope examples/vmm-demo"
	for f in $formats; do targets="$targets tests/fuzz/fuzz_$f"; done
	nice -n "$nice" ninja -C "$build" -j"$jobs" $targets
fi
[ -d "$build/fuzz-corpus" ] || "$src/tests/fuzz/make-corpus.sh" "$build"

export LSAN_OPTIONS="suppressions=$src/tests/fuzz/lsan.supp:print_suppressions=0"
# no allocation stacks: recording one per malloc was a quarter of the time of fuzz_tracedat
# (libtraceevent allocates per token); replay a crash input without it for the full report
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
runs=""
[ -n "${RUNS:-}" ] && runs="-runs=$RUNS"
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
	[ -x "$build/tests/fuzz/fuzz_$f" ] || { echo "run.sh: no $build/tests/fuzz/fuzz_$f" >&2; exit 2; }
	mkdir -p "$build/fuzz-work/$f" "$build/fuzz-artifacts/$f"
	echo "run.sh: fuzzing $f for $secs s${runs:+ ($runs)}"
	# shellcheck disable=SC2086
	if ! nice -n "$nice" "$build/tests/fuzz/fuzz_$f" $opts $runs -max_total_time="$secs" \
		-rss_limit_mb=2048 -timeout=10 -print_final_stats=1 -reload=0 \
		-artifact_prefix="$build/fuzz-artifacts/$f/" \
		"$build/fuzz-work/$f" "$build/fuzz-corpus/$f" >"$build/fuzz-artifacts/$f.log" 2>&1; then
		echo "run.sh: $f FOUND A PROBLEM: see $build/fuzz-artifacts/$f.log" >&2
		status=1
	fi
	grep -E '^#[0-9]+[[:space:]]+DONE|stat::' "$build/fuzz-artifacts/$f.log" || true
done
exit $status
