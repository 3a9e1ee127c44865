#!/usr/bin/env bash
# One table of commands (tools/vmscope/commands.h) behind `vmscope help` and vmscope(1)'s
# COMMANDS section (issue 20, item 6). Speaks TAP. Checks, each with its own parsing: the
# page in the tree has the section man/commands.py makes from the table; the page the build
# installs (build/man/vmscope.1) lists, as troff, the same names and summaries that
# `vmscope help` prints, in its order; every command has its page and every page a command;
# the page and the README no longer call xentrace unsupported; export's usage line is whole.
set -u
VMS=${VMS_BUILD_DIR:?}/tools/vmscope/vmscope
SRC=${VMS_SOURCE_DIR:?}
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }

if out=$(python3 "$SRC/man/commands.py" --check "$SRC/man/vmscope.1" "$SRC/tools/vmscope/commands.h" 2>&1); then
  ok "man/vmscope.1's COMMANDS section is the one commands.h gives"
else notok "man/vmscope.1 COMMANDS vs commands.h" "$(head -20 <<<"$out" | tr '\n' '|')"; fi

"$VMS" help | sed -n '/^commands:$/,/^$/p' | sed '1d;/^$/d' | sed -E 's/^ +([a-z]+) +(.*)$/\1\t\2/' > "${VMS_BUILD_DIR}/help-commands.txt"
page=${VMS_BUILD_DIR}/man/vmscope.1
if python3 - "$page" "${VMS_BUILD_DIR}/help-commands.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
sec = text[text.index('.SH COMMANDS\n'):]
sec = sec[:sec.index('\n.SH ', 1)]
lines = [l for l in sec.splitlines() if not l.startswith('.\\"')]
man = []
for i, l in enumerate(lines):
    if l == '.TP':
        name = lines[i + 1]
        assert name.startswith('.B '), name
        desc = lines[i + 2].replace('\\-', '-').replace('\\e', '\\').replace('\\&', '')
        m = re.fullmatch(r'(.*) \(\\fBvmscope-(\w+)\\fR\(1\)\)', desc)
        assert m and m.group(2) == name[3:], desc
        man.append((name[3:], m.group(1)))
help_ = [tuple(l.rstrip('\n').split('\t')) for l in open(sys.argv[2])]
assert len(help_) >= 14 and man == help_, (man, help_)
for c in ('pcpus', 'export', 'latency'):
    assert c in dict(man), c
PY
then ok "the installed vmscope(1) lists the commands of 'vmscope help', with its summaries, in its order"
else notok "vmscope(1) vs vmscope help"; fi

bad=""
while IFS=$'\t' read -r c _; do [ -f "$SRC/man/vmscope-$c.1" ] || bad="$bad no-page:$c"; done < "${VMS_BUILD_DIR}/help-commands.txt"
for p in "$SRC"/man/vmscope-*.1; do
  c=$(basename "$p" .1); c=${c#vmscope-}
  cut -f1 "${VMS_BUILD_DIR}/help-commands.txt" | grep -qx "$c" || bad="$bad no-command:$c"
done
if [ -z "$bad" ]; then ok "a page per command, a command per page"; else notok "pages and commands" "$bad"; fi

if ! grep -qi "xentrace[^.]*not supported" "$SRC/man/vmscope.1" "$SRC/README.md" && grep -q "xentrace" "$SRC/man/vmscope.1"; then
  ok "vmscope(1) and the README name xentrace as read, not as unsupported"
else notok "xentrace in the docs" "$(grep -n -i "not supported" "$SRC/man/vmscope.1" "$SRC/README.md")"; fi
# export's usage line names every option its --help describes (it used to stop at --map)
h=$("$VMS" export --help)
missing=$(comm -13 <(sed '/^$/q' <<<"$h" | grep -o -- '--[a-z][a-z-]*' | sort -u) \
  <(sed '1,/^$/d' <<<"$h" | grep -oE -- '^ +(-[a-z], )?--[a-z][a-z-]*|, --[a-z][a-z-]*' | grep -o -- '--[a-z][a-z-]*' | grep -vx -- --help | sort -u))
if [ -z "$missing" ] && grep -q -- "-o FILE" <<<"$(sed '/^$/q' <<<"$h")"; then ok "export's usage line names all its options"
else notok "export usage line" "missing:$(tr '\n' ' ' <<<"$missing")"; fi
echo "1..$n"
