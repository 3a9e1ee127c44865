#!/usr/bin/env python3
"""Hand-made xentrace files for the corner cases (the layout of xen/include/public/trace.h,
written with struct; the same as tests/xen/xt_writer.h): the model scenario of
test_xentrace.c, records without TSC across CPU changes, a preemption between two domains on
one CPU, a vCPU that moves between CPUs, lost records, a loss that ends at the TSC at which
another CPU's vCPU blocks, and a CPU whose records end before another CPU's loss. xenalyze_compare.py reads them with xenalyze and with
vmscope; test_xentrace.c derives the first one's numbers by hand, the last two's docstrings
theirs.
lost_many (many vCPUs, many lost-records markers) is xen_lost_markers.py's: xenalyze stops
(FATAL) on most of its files; where it runs, seed 8 agrees on every row, and on seeds 2 and 6
(with back_before) xenalyze reads one CPU's records twice (see xen_lost_markers.py).

usage: xt_handmade.py DIR   (writes DIR/*.bin, prints their paths)"""
import os, struct, sys


class W:
    def __init__(self):
        self.b = bytearray()
        self.blk = None

    def block(self, cpu):
        self.end()
        self.blk = len(self.b)
        self.b += struct.pack("<III", 0x0001F003 | 2 << 28, cpu, 0)

    def end(self):
        if self.blk is not None:
            struct.pack_into("<I", self.b, self.blk + 8, len(self.b) - self.blk - 12)

    def rec(self, ev, tsc, words=()):
        self.b += struct.pack("<I", ev | len(words) << 28 | ((1 << 31) if tsc else 0))
        if tsc:
            self.b += struct.pack("<Q", tsc)
        self.b += b"".join(struct.pack("<I", w) for w in words)

    def rs(self, tsc, dom, vcpu, old, new):
        self.rec(0x21001 | old << 8 | new << 4, tsc, [dom << 16 | vcpu])

    def exit(self, tsc, reason):
        self.rec(0x81102, tsc, [reason, 0x1000, 0])

    def entry(self, tsc):
        self.rec(0x81001, tsc)

    def save(self, path):
        self.end()
        open(path, "wb").write(bytes(self.b))
        return path


RUNNING, RUNNABLE, BLOCKED, OFFLINE = 0, 1, 2, 3
IDLE = 32767


def halts(w):
    """CPU 0: d1v0 runs from 100, exits on HLT at 150, blocks at 200; the idle vCPU runs"""
    w.block(0)
    w.rs(100, 1, 0, RUNNABLE, RUNNING)
    w.exit(150, 12)
    w.rs(200, 1, 0, RUNNING, BLOCKED)
    w.rs(210, IDLE, 0, RUNNABLE, RUNNING)


def scenario(d):
    w = W()
    halts(w)
    w.block(1)
    w.rs(300, 1, 0, BLOCKED, RUNNABLE)
    w.block(0)
    w.rs(350, IDLE, 0, RUNNING, RUNNABLE)
    w.rs(360, 1, 0, RUNNABLE, RUNNING)
    w.entry(400)
    w.exit(420, 1)
    w.entry(450)
    w.rec(0x82004, 500, [0])
    return w.save(os.path.join(d, "scenario.bin"))


def notsc(d):
    """Exits whose VMENTRY has no TSC: it takes the last TSC of its own CPU, not the other
    CPU's later one written in between."""
    w = W()
    w.block(0)
    w.rs(1000, 2, 0, RUNNABLE, RUNNING)
    w.exit(1100, 30)
    w.block(1)
    w.rs(1050, 2, 1, RUNNABLE, RUNNING)
    w.exit(1300, 18)
    w.rec(0x82013, 1400)              # CPU 1 at 1400
    w.block(0)
    w.rec(0x82016, 1250, [0x70, 1])   # an IO handler record at 1250 on CPU 0
    w.rec(0x81001 | 0, 0)             # VMENTRY without TSC: 1250 (CPU 0's), not 1400
    w.exit(1500, 1)
    w.entry(1530)
    w.rs(1600, 2, 0, RUNNING, BLOCKED)
    w.rs(1610, IDLE, 0, RUNNABLE, RUNNING)
    w.block(1)
    w.entry(1700)
    w.rs(1800, 2, 1, RUNNING, RUNNABLE)
    w.rs(1810, IDLE, 1, RUNNABLE, RUNNING)
    w.block(0)
    w.rec(0x22209, 1900)
    w.block(1)
    w.rec(0x22209, 1950)
    return w.save(os.path.join(d, "notsc.bin"))


def preempt(d):
    """Two domains share CPU 0: d3v0 is preempted by d4v0 and back, twice."""
    w = W()
    w.block(0)
    t = 1000
    w.rs(t, 3, 0, RUNNABLE, RUNNING)
    for k in range(2):
        t += 400
        w.rs(t, 3, 0, RUNNING, RUNNABLE)
        w.rs(t + 5, 4, 0, RUNNABLE, RUNNING)
        t += 300
        w.rs(t, 4, 0, RUNNING, RUNNABLE)
        w.rs(t + 7, 3, 0, RUNNABLE, RUNNING)
    w.rs(t + 500, 3, 0, RUNNING, BLOCKED)
    w.rs(t + 510, 4, 0, RUNNABLE, RUNNING)
    w.rec(0x22209, t + 900)
    return w.save(os.path.join(d, "preempt.bin"))


def migrate(d):
    """d5v0 runs on CPU 0, blocks, wakes, runs on CPU 1; the idle vCPUs fill in."""
    w = W()
    w.block(0)
    w.rs(100, 5, 0, RUNNABLE, RUNNING)
    w.rs(400, 5, 0, RUNNING, BLOCKED)
    w.rs(405, IDLE, 0, RUNNABLE, RUNNING)
    w.block(1)
    w.rs(150, IDLE, 1, RUNNABLE, RUNNING)
    w.rs(700, 5, 0, BLOCKED, RUNNABLE)
    w.rs(720, IDLE, 1, RUNNING, RUNNABLE)
    w.rs(725, 5, 0, RUNNABLE, RUNNING)
    w.rs(1100, 5, 0, RUNNING, OFFLINE)
    w.rs(1105, IDLE, 1, RUNNABLE, RUNNING)
    w.block(0)
    w.rec(0x22209, 1200)
    w.block(1)
    w.rec(0x22209, 1300)
    return w.save(os.path.join(d, "migrate.bin"))


def lost(d):
    """CPU 0 loses records from 400 (d1v0 blocked there; it wakes on CPU 1 at 500 meanwhile)
    until the marker at 600, which names d1v0 as running when the loss ended."""
    w = W()
    halts(w)
    w.rec(0x1F001, 600, [4, 0 << 16 | 1, 400, 0])  # 4 lost; u16 did 1, u16 vid 0; from 400
    w.rs(650, 1, 0, RUNNABLE, RUNNING)
    w.entry(700)
    w.rs(900, 1, 0, RUNNING, BLOCKED)
    w.rs(910, IDLE, 0, RUNNABLE, RUNNING)
    w.block(1)
    w.rs(300, IDLE, 1, RUNNABLE, RUNNING)
    w.rs(500, 1, 0, BLOCKED, RUNNABLE)
    w.rec(0x22209, 1000)
    w.block(0)
    w.rec(0x22209, 1100)
    return w.save(os.path.join(d, "lost.bin"))


def lost_tie(d):
    """A loss on CPU 1 ends (its marker) at the very TSC at which d1v0 blocks on CPU 0: 500.
    The loss is [300, 500): the marker is written when CPU 1's trace runs again, so at 500 no
    CPU is losing records and d1v0's block is an ordinary one (xenalyze's rule would make a
    vCPU that stops running while a CPU is losing records LOST). By hand: d1v0 running
    100..500 and 805..900 (the end), blocked 500..800 (300), runnable (wake) 800..805; no LOST
    interval. (vmscope took CPU 0's record of 500 before CPU 1's marker of 500, the lower CPU
    first, and made d1v0 LOST from 500 to 805; xenalyze took the marker first.)"""
    w = W()
    w.block(0)
    w.rs(100, 1, 0, RUNNABLE, RUNNING)
    w.rs(500, 1, 0, RUNNING, BLOCKED)
    w.rs(505, IDLE, 0, RUNNABLE, RUNNING)
    w.rs(795, IDLE, 0, RUNNING, RUNNABLE)
    w.rs(800, 1, 0, BLOCKED, RUNNABLE)
    w.rs(805, 1, 0, RUNNABLE, RUNNING)
    w.rec(0x22209, 900)
    w.block(1)
    w.rs(150, IDLE, 1, RUNNABLE, RUNNING)
    w.rec(0x1F001, 500, [3, 1 << 16 | IDLE, 300, 0])  # 3 lost; idle v1 ran when it ended
    w.rec(0x22209, 950)
    return w.save(os.path.join(d, "lost-tie.bin"))


def cpu_ends_early(d):
    """CPU 0's records end at 400 with d1v0 running; CPU 1 loses records from 600 to its
    marker at 900. xenalyze's deactivate_pcpu makes d1v0 LOST where CPU 0 ends (400), so the
    marker's rule (every vCPU not running is LOST at the first lost TSC) makes it LOST again
    at 600. By hand: d1v0 running 100..400 (300), lost 400..600 (200); idle v1 running
    150..600 and 900..1000 (2, 550), lost 600..900 (300). (The model used to deactivate the
    CPUs at the end of the pass, after the marker: d1v0 had no LOST interval.)"""
    w = W()
    w.block(0)
    w.rs(100, 1, 0, RUNNABLE, RUNNING)
    w.rec(0x22209, 400)
    w.block(1)
    w.rs(150, IDLE, 1, RUNNABLE, RUNNING)
    w.rec(0x1F001, 900, [5, 1 << 16 | IDLE, 600, 0])  # 5 lost; idle v1 ran when it ended
    w.rec(0x22209, 1000)
    return w.save(os.path.join(d, "cpu-ends-early.bin"))


def lost_many(d, seed=7, cpus=4, doms=8, vcpus=4, rounds=60, back_before=False):
    """doms x vcpus vCPUs on `cpus` CPUs (vCPU k on CPU k % cpus, each CPU switching between its
    own, preempted or blocking, woken on the CPU that runs them next) with lost-records
    markers interleaved on every CPU; some markers' first lost TSC lies before records other
    CPUs wrote later, so that the model sees the markers' TSCs go down as well as up (the
    LOST-to-LOST intervals of the vCPUs not running count only when positive)."""
    import random
    rnd = random.Random(seed)
    w = W()
    per = [[(dm, v) for dm in range(1, doms + 1) for v in range(vcpus)
            if ((dm - 1) * vcpus + v) % cpus == c] for c in range(cpus)]
    state = {}          # (dom, vcpu) -> RUNNABLE or BLOCKED while not running
    cur = [None] * cpus
    t = [1000 + 37 * c for c in range(cpus)]
    for rnd_i in range(rounds):
        for c in range(cpus):
            w.block(c)
            for _ in range(rnd.randint(1, 3)):
                t[c] += rnd.randint(50, 400)
                if cur[c] is not None:
                    new = rnd.choice((RUNNABLE, BLOCKED))
                    w.rs(t[c], cur[c][0], cur[c][1], RUNNING, new)
                    state[cur[c]] = new
                nxt = rnd.choice([x for x in per[c] if x != cur[c]] or per[c])
                if state.get(nxt, RUNNABLE) == BLOCKED:
                    t[c] += 3
                    w.rs(t[c], nxt[0], nxt[1], BLOCKED, RUNNABLE)
                t[c] += 5
                w.rs(t[c], nxt[0], nxt[1], RUNNABLE, RUNNING)
                cur[c] = nxt
                if rnd.random() < 0.3:
                    t[c] += rnd.randint(10, 100)
                    w.exit(t[c], rnd.choice((1, 12, 30, 48)))
                    t[c] += rnd.randint(10, 100)
                    w.entry(t[c])
            if rnd_i >= 2 and rnd.random() < 0.35:  # (after every CPU's first vCPU ran:
                # a CPU whose first record comes after a marker is a FATAL for xenalyze)
                # a marker: lost from `first` (sometimes far back: before what other CPUs
                # wrote since) until now, naming the vCPU running here when it ended
                last = t[c]
                t[c] += rnd.randint(100, 900)
                first = t[c] - rnd.randint(1, t[c] - last)
                if back_before:
                    first = max(1, t[c] - rnd.choice((50, 300, 2500, 6000)))
                dm, v = cur[c]
                w.rec(0x1F001, t[c], [rnd.randint(1, 99), v << 16 | dm, first & 0xffffffff,
                                      first >> 32])
    for c in range(cpus):
        w.block(c)
        w.rec(0x22209, t[c] + 100)
    return w.save(os.path.join(d, "lost-many-%d.bin" % seed))


if __name__ == "__main__":
    d = sys.argv[1]
    os.makedirs(d, exist_ok=True)
    for f in (scenario, notsc, preempt, migrate, lost, lost_tie, cpu_ends_early, lost_many):
        print(f(d))
