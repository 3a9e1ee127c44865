#!/usr/bin/env python3
"""Exact transforms (vmscope/clock.h, vms_linear) checked with Python's integers and fractions,
independently of vmscope's 128-bit arithmetic:
 1. every applied value equals out0 + floor(((t - in0) * num + frac + den // 2) / den),
    saturated to [0, 2^64 - 1] (the documented form), on a day of timestamps and the extremes;
 2. a transform built from (slope, in0, value at in0) given as long doubles stays within
    0.5 ns (+ slope quantization, < 1e-4 ns) of the real map value + slope * (t - in0) over a
    day: no nanosecond lost, whatever the size of the timestamps (epoch-sized origins too);
 3. a composition stays within 0.5 ns (+ 1e-4) of the exact composition of its two parts'
    rational maps over a day.
TAP output."""
import re
import subprocess
import sys
from fractions import Fraction

HEX = re.compile(r'^(-?)0x([0-9a-f]+)(?:\.([0-9a-f]*))?p([+-]\d+)$')


def ld(s):
    m = HEX.match(s)
    if not m:
        raise ValueError(s)
    sign, ip, fp, e = m.groups()
    fp = fp or ''
    v = Fraction(int(ip + fp, 16), 16 ** len(fp)) * Fraction(2) ** int(e)
    return -v if sign else v


def main():
    out = subprocess.run([sys.argv[1]], check=True, capture_output=True, text=True).stdout
    L, S, C, A = {}, {}, {}, []
    for line in out.splitlines():
        w = line.split()
        if w[0] == 'L':
            L[int(w[1])] = tuple(int(x) for x in w[2:])
        elif w[0] == 'S':
            S[int(w[1])] = (ld(w[2]), int(w[3]), ld(w[4]))
        elif w[0] == 'C':
            C[int(w[1])] = (int(w[2]), int(w[3]))
        elif w[0] == 'A':
            A.append((int(w[1]), int(w[2]), int(w[3])))

    def real(i, t):
        in0, out0, num, den, frac = L[i]
        return out0 + Fraction((t - in0) * num + frac, den)

    def form(i, t):
        in0, out0, num, den, frac = L[i]
        v = out0 + ((t - in0) * num + frac + den // 2) // den
        return min(max(v, 0), 2**64 - 1)

    print('1..3')
    bad = [(i, t, a, form(i, t)) for i, t, a in A if a != form(i, t)]
    print(('ok' if not bad else 'not ok') + f' 1 - {len(A)} applied values equal the exact form' +
          ('' if not bad else f' # first mismatch {bad[0]}'))
    day = 86400 * 10**9
    tol = Fraction(1, 2) + Fraction(1, 10**4)
    worst, n, bad = Fraction(0), 0, []
    for i, t, a in A:
        if i not in S:
            continue
        slope, in0, v = S[i]
        if not (in0 <= t <= in0 + day):
            continue
        want = v + slope * (t - in0)
        if not (0 <= want < 2**64):
            continue
        n += 1
        d = abs(a - want)
        worst = max(worst, d)
        if d > tol:
            bad.append((i, t, a, float(want)))
    print(('ok' if not bad and n > 1000 else 'not ok') +
          f' 2 - built transforms within 0.5 ns of the real map over a day ({n} values, worst {float(worst):.6f} ns)' +
          ('' if not bad else f' # {bad[0]}'))
    worst, n, bad = Fraction(0), 0, []
    for i, t, a in A:
        if i not in C:
            continue
        o, inner = C[i]
        if not (L[inner][0] <= t <= L[inner][0] + day):
            continue
        want = real(o, real(inner, t))
        n += 1
        d = abs(a - want)
        worst = max(worst, d)
        if d > tol:
            bad.append((i, t, a, float(want)))
    print(('ok' if not bad and n > 1000 else 'not ok') +
          f' 3 - compositions within 0.5 ns of the exact composition over a day ({n} values, worst {float(worst):.6f} ns)' +
          ('' if not bad else f' # {bad[0]}'))


main()
