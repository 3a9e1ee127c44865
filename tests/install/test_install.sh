#!/usr/bin/env bash
# `meson install` as a user would run it, into a DESTDIR: the pkg-config file (with the
# private dependencies, and a program built and linked from it alone that reads a trace), the
# man pages where man finds them (MANPATH), and the bash completion (sourced, then asked for
# commands and a command's options, which must be those of its --help). Speaks TAP.
set -u
BUILD=${VMS_BUILD_DIR:?}
VMS=$BUILD/tools/vmscope/vmscope
DEST=$BUILD/test-tmp/install
rm -rf "$DEST" && mkdir -p "$DEST"
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

if ! meson install -C "$BUILD" --no-rebuild --destdir "$DEST" --quiet > "$DEST.log" 2>&1; then
  notok "meson install" "$(tail -5 "$DEST.log")"; echo "1..$n"; exit 0
fi
ok "meson install into a DESTDIR"
pc=$(find "$DEST" -name vmscope.pc | head -1)
if [ -n "$pc" ] && grep -q '^Requires.private:.*libtraceevent.*libzstd' "$pc" && grep -q '^Libs:.*-lvmscope' "$pc" \
   && ! grep -q '^Requires:' "$pc"; then ok "vmscope.pc: -lvmscope, the dependencies private"; else notok "vmscope.pc" "$(cat "$pc" 2>/dev/null)"; fi

# a program that knows only the installed headers and vmscope.pc
cat > "$DEST/use.c" <<'C'
#include <stdio.h>
#include <vmscope/session.h>
int main(int argc, char **argv)
{
	struct vms_error err = { 0 };
	struct vms_session *s = vms_session_open((const char *const *)argv + 1, (uint32_t)argc - 1, NULL, &err);
	if (!s || vms_session_run(s, NULL, NULL, NULL, &err) < 0) {
		printf("error: %s\n", err.msg);
		return 1;
	}
	printf("%llu\n", (unsigned long long)vms_session_events(s));
	vms_session_free(s);
	return 0;
}
C
MK=${VMS_MK_TRACE:-}
export PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_PATH=$(dirname "${pc:-/none}")
# the library may be built with sanitizers: the program then needs them too (harmless if not)
if [ -n "$pc" ] && cc -std=c11 -fsanitize=address,undefined "$DEST/use.c" -o "$DEST/use" \
     $(pkg-config --cflags --libs --static vmscope) 2> "$DEST/cc.log"; then
  if [ -n "$MK" ] && "$MK" ns "$DEST/t.dat" && [ "$("$DEST/use" "$DEST/t.dat")" = 7 ]; then
    ok "a program built from vmscope.pc alone reads a trace (7 events, mk_trace ns)"
  else notok "program from vmscope.pc" "$("$DEST/use" "$DEST/t.dat" 2>&1 | head -3)"; fi
else notok "build against vmscope.pc" "$(head -5 "$DEST/cc.log" 2>/dev/null)"; fi

mandir=$(dirname "$(find "$DEST" -name vmscope-report.1 | head -1)")
if command -v man >/dev/null; then
  # every page the source tree has (one per command, tests/cli checks that), not a list here
  bad=""
  for page in "${VMS_SOURCE_DIR:?}"/man/*.1; do
    c=$(basename "$page" .1)
    MANPATH=$(dirname "$mandir") man -w "$c" >/dev/null 2>&1 || bad="$bad $c"
  done
  if [ -z "$bad" ]; then ok "man finds every page under the installed share/man"; else notok "man pages" "$bad"; fi
else skip "man finds the pages" "man is not installed"; fi

comp=$(find "$DEST" -path '*bash-completion/completions/vmscope' | head -1)
if [ -n "$comp" ]; then
  got=$(bash -c '
    complete() { :; }; compopt() { :; }
    source "$1"
    COMP_WORDS=("$2" re); COMP_CWORD=1; _vmscope; echo "${COMPREPLY[*]}"
    COMP_WORDS=("$2" exits --p); COMP_CWORD=2; _vmscope; echo "${COMPREPLY[*]}"
    COMP_WORDS=("$2" vcpus --); COMP_CWORD=2; _vmscope; echo "${COMPREPLY[*]}"' _ "$comp" "$VMS")
  want3=$("$VMS" vcpus --help | grep -o -- '--[a-z][a-z-]*' | sort -u | tr '\n' ' ')
  if [ "$(sed -n 1p <<<"$got")" = "report" ] && [ "$(sed -n 2p <<<"$got")" = "--per-guest" ] \
     && [ "$(sed -n 3p <<<"$got" | tr ' ' '\n' | grep -v -- --version | sort -u | tr '\n' ' ')" = "$want3" ]; then
    ok "bash completion: commands, and a command's options as its --help names them"
  else notok "bash completion" "$(tr '\n' '|' <<<"$got")"; fi
else notok "bash completion installed"; fi
echo "1..$n"
