#!/usr/bin/env python3
"""The COMMANDS section of vmscope(1) from the one table of commands.

tools/vmscope/commands.h lists every command as VMS_COMMAND(name, "summary"); main.c builds
the dispatcher and `vmscope help` from it. This script writes the page with its COMMANDS
section (from ".SH COMMANDS" to the next ".SH") made from the same table:

    commands.py PAGE COMMANDS_H OUTPUT    the page, its section regenerated, into OUTPUT
    commands.py --check PAGE COMMANDS_H   exit 1 (saying what differs) when PAGE's section is
                                          not what the table gives
"""
import re
import sys

ENTRY = re.compile(r'^VMS_COMMAND\((\w+), "((?:[^"\\]|\\.)*)"\)\s*$')


def table(path):
    rows = []
    for line in open(path, encoding='utf-8'):
        m = ENTRY.match(line)
        if m:
            rows.append((m.group(1), m.group(2).encode().decode('unicode_escape')))
        elif line.startswith('VMS_COMMAND'):
            sys.exit('%s: cannot read the entry %r' % (path, line.strip()))
    if not rows:
        sys.exit('%s: no VMS_COMMAND entry' % path)
    return rows


def troff(text):
    """Text for a troff line: backslashes and hyphens escaped, no leading control dot."""
    text = text.replace('\\', '\\e').replace('-', '\\-')
    return '\\&' + text if text[:1] in ('.', "'") else text


def section(rows):
    out = ['.SH COMMANDS\n',
           '.\\" generated from tools/vmscope/commands.h by man/commands.py: edit the table\n']
    for name, summary in rows:
        out += ['.TP\n', '.B %s\n' % troff(name),
                '%s (\\fBvmscope\\-%s\\fR(1))\n' % (troff(summary), troff(name))]
    return ''.join(out)


def split(page_text, path):
    start = page_text.find('.SH COMMANDS\n')
    end = page_text.find('\n.SH ', start + 1)
    if start < 0 or end < 0:
        sys.exit('%s: no COMMANDS section followed by another' % path)
    return page_text[:start], page_text[start:end + 1], page_text[end + 1:]


def main(argv):
    check = argv[1:2] == ['--check']
    args = argv[2:] if check else argv[1:]
    if len(args) != (2 if check else 3):
        sys.exit(__doc__)
    page = open(args[0], encoding='utf-8').read()
    head, old, tail = split(page, args[0])
    new = section(table(args[1]))
    if check:
        if old != new:
            import difflib
            sys.stdout.writelines(difflib.unified_diff(
                old.splitlines(True), new.splitlines(True), args[0], 'from ' + args[1]))
            return 1
        return 0
    with open(args[2], 'w', encoding='utf-8') as f:
        f.write(head + new + tail)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
