#!/bin/sh
# A program built outside the project exactly as examples/README.md shows: the project is
# installed into a temporary root (meson install --destdir), then examples/outside/hello.c is
# built with the installed vmscope-tracegen, cc -std=c11 and `pkg-config --cflags --libs
# vmstrace` (PKG_CONFIG_PATH pointing there; PKG_CONFIG_SYSROOT_DIR because the files are
# under the temporary root, not under the prefix the .pc file names). Then: the ordinary
# link kept the control socket (`vmscope ctl stats` counts the 1000 events written), and
# babeltrace2 reads the 1000 events. The generated code also compiles with clang -std=c11
# when clang is installed. TAP output; a TAP skip (1..0 # SKIP, exit 0: Meson's TAP protocol counts 77 as an
# error) without pkg-config or babeltrace2.
# Usage: external-build.sh B_SANITIZE (the build's sanitizers: the installed library was
# compiled with them, so the program links with them too).
set -eu
san=${1:-none}
build=$VMS_BUILD_DIR
src=$VMS_SOURCE_DIR
for tool in pkg-config babeltrace2 cc; do
	if ! command -v $tool >/dev/null 2>&1; then
		echo "1..0 # SKIP $tool is not installed"
		exit 0
	fi
done
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
echo "1..4"

meson install -C "$build" --no-rebuild --quiet --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" | sed 's/^/# /'; echo "not ok 1 - meson install --destdir"; exit 1; }
pc=$(find "$tmp/root" -name vmstrace.pc | head -n 1)
[ -n "$pc" ] || { echo "not ok 1 - vmstrace.pc installed"; exit 1; }
export PKG_CONFIG_PATH="$(dirname "$pc")" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
echo "ok 1 - installed; pkg-config --cflags --libs vmstrace: $(pkg-config --cflags --libs vmstrace)"

flags=
case $san in
*address*|*undefined*|*thread*) flags="-fsanitize=$san" ;;
esac
mkdir "$tmp/hello"
cp "$src/examples/outside/hello.c" "$src/examples/outside/trace-events" "$tmp/hello/"
cd "$tmp/hello"
# the commands of examples/README.md (pkgconf puts the sysroot before variables too, the
# older pkg-config does not)
tracegen=$(pkg-config --variable=tracegen vmstrace)
[ -x "$tracegen" ] || tracegen="$tmp/root$tracegen"
"$tracegen" trace-events trace-hello.h trace-hello.c
# shellcheck disable=SC2046
if cc -std=c11 -Wall -Wextra -Werror $flags -o hello hello.c trace-hello.c \
	$(pkg-config --cflags --libs vmstrace) 2>cc.log; then
	echo "ok 2 - cc -std=c11 -Wall -Wextra -Werror hello.c trace-hello.c \$(pkg-config --cflags --libs vmstrace)"
else
	sed 's/^/# /' cc.log
	echo "not ok 2 - cc -std=c11 ... \$(pkg-config --cflags --libs vmstrace)"
	exit 1
fi
if command -v clang >/dev/null 2>&1; then
	# shellcheck disable=SC2046
	if clang -std=c11 -Wall -Wextra -Werror -pedantic -c hello.c trace-hello.c \
		$(pkg-config --cflags vmstrace) 2>clang.log; then
		echo "ok 3 - clang -std=c11 -pedantic compiles the generated code"
	else
		sed 's/^/# /' clang.log
		echo "not ok 3 - clang -std=c11 -pedantic compiles the generated code"
		exit 1
	fi
else
	echo "ok 3 # SKIP clang is not installed"
fi

# run it; while it waits on its stdin, ask its control socket for the counts
sock="/tmp/vmst-ext-$$.sock"
mkfifo in
VMSCOPE_TRACE="enable=hello_*,file=$tmp/hello-trace,socket=$sock" ./hello <in >out 2>err &
pid=$!
exec 3>in
tries=0
until grep -q "ticks traced" out 2>/dev/null; do
	tries=$((tries + 1))
	[ $tries -lt 600 ] || { echo "not ok 4 - hello did not start"; sed 's/^/# /' err; exit 1; }
	sleep 0.1
done
stats=$("$build/tools/vmscope/vmscope" ctl "$sock" stats) ||
	{ echo "not ok 4 - vmscope ctl on the socket of a program linked the ordinary way"; exit 1; }
echo "$stats" | sed 's/^/# /'
echo >&3
exec 3>&-
wait $pid
pid=
total=$(echo "$stats" | awk '$1 == "total" { print $2 }')
events=$(babeltrace2 "$tmp/hello-trace" | grep -c ' hello_tick: ')
if [ "$total" = 1000 ] && [ "$events" = 1000 ]; then
	echo "ok 4 - the control socket answered (1000 written) and babeltrace2 reads 1000 events"
else
	echo "not ok 4 - control socket says '$total' written, babeltrace2 read $events events (want 1000)"
	exit 1
fi
