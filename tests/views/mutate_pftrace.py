#!/usr/bin/env python3
"""Break one rule in a .pftrace, so that the test sees check_perfetto_rules.py fail on it.

usage: mutate_pftrace.py IN OUT WHAT
  noneeds   the first track event packet loses SEQ_NEEDS_INCREMENTAL_STATE
  noclear   the first packet loses SEQ_INCREMENTAL_STATE_CLEARED
  iid       the first track event's name_iid becomes one never interned
  pid       the first root track gets a ProcessDescriptor (a made-up pid 424242)
  tid       the first track named "comm (N)" becomes "comm (N + 1000000)"
  cross     an END is given a time (absolute, on BOOTTIME) after the next BEGIN on its track:
            the reader then pairs it with that BEGIN (two slices cross)
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_perfetto_rules as rules  # noqa: E402


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def parse(b):
    """[[num, wire type, value]] (check_perfetto_rules.py's decoder)"""
    return [list(f) for f in rules.fields_wt(b)]


def build(fl):
    out = bytearray()
    for num, wt, v in fl:
        out += varint(num << 3 | wt)
        if wt == 0:
            out += varint(v)
        elif wt in (1, 5):
            out += v
        else:
            out += varint(len(v)) + v
    return bytes(out)


def field(fl, num):
    return next((f for f in fl if f[0] == num), None)


def etype(p):
    te = field(p, 11)
    return field(parse(te[2]), 9)[2] if te and field(parse(te[2]), 9) else None


def track(p):
    f = field(parse(field(p, 11)[2]), 11)
    return f[2] if f else None


def cross(pk):
    """On a sequence, packets A B C D (BEGIN END BEGIN END on one track, times on clock 64,
    D at least 2 ns after C): B is given the absolute time C + 1 on BOOTTIME (C's delta takes
    B's, so that C and what follows keep their times). The reader then sees B close C: two
    slices that cross."""
    seqs = {}
    for i, p in enumerate(pk):
        seqs.setdefault(field(p, 10)[2], []).append(i)
    for ix in seqs.values():
        t = None
        ev = []   # (packet index, absolute time) of events on clock 64
        for i in ix:
            p = pk[i]
            snap = field(p, 6)
            if snap:
                for c in parse(snap[2]):
                    cf = parse(c[2])
                    if field(cf, 1)[2] == 64:
                        t = field(cf, 2)[2]
            elif field(p, 8) and not field(p, 58) and t is not None:
                t += field(p, 8)[2]
                ev.append((i, t))
        for k in range(len(ev) - 3):
            (a, _), (b, _), (c, tc), (d, td) = ev[k:k + 4]
            if ([etype(pk[x]) for x in (a, b, c, d)] == [1, 2, 1, 2] and td >= tc + 2 and
                    len({track(pk[x]) for x in (a, b, c, d)}) == 1):
                field(pk[c], 8)[2] += field(pk[b], 8)[2]
                field(pk[b], 8)[2] = tc + 1
                pk[b].insert(1, [58, 0, 6])
                return True
    return False


def main():
    src, dst, what = sys.argv[1:4]
    pk = [parse(v) for _, _, v in parse(open(src, "rb").read())]
    done = False
    for i, p in enumerate(pk):
        te, fl, td = field(p, 11), field(p, 13), field(p, 60)
        if what == "noneeds" and te and fl and fl[2] & 2:
            fl[2] &= ~2
        elif what == "noclear" and i == 0:
            field(p, 13)[2] &= ~1
        elif what == "iid" and te:
            ef = parse(te[2])
            if not field(ef, 10):
                continue
            field(ef, 10)[2] = 999999
            te[2] = build(ef)
        elif what == "pid" and td and not field(parse(td[2]), 5):
            tf = parse(td[2]) + [[3, 2, build([[1, 0, 424242]])]]
            td[2] = build(tf)
        elif what == "tid" and td:
            tf = parse(td[2])
            nm = field(tf, 2)
            m = re.fullmatch(rb"(.*) \((\d+)\)", nm[2]) if nm else None
            if not m:
                continue
            nm[2] = m[1] + b" (%d)" % (int(m[2]) + 1000000)
            td[2] = build(tf)
        else:
            continue
        done = True
        break
    if what == "cross":
        done = cross(pk)
    if not done:
        sys.exit("mutate_pftrace.py: nothing to change for %s" % what)
    open(dst, "wb").write(b"".join(varint(1 << 3 | 2) + varint(len(b)) + b
                                   for b in (build(p) for p in pk)))


if __name__ == "__main__":
    main()
