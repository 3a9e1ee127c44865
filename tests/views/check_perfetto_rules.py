#!/usr/bin/env python3
"""Check that a vmscope .pftrace follows the rules of Perfetto's trace processor that the file
relies on (docs/perfetto.md lists them, each with the line of Perfetto's code that applies it),
decoding the protobuf wire format here, by itself (no protoc, no code shared with the writer).

usage: check_perfetto_rules.py TRACE.pftrace [--ids MACHINE=IDS.json]...

IDS.json (made by the test from the traces, not from the export): {"tids": [...], "pids":
{"TID": PID, ...}} -- the thread ids the machine's trace records and the process of each
thread where the trace says it; {"tids": null} for a trace that records no thread ids (Xen).

Checked, per packet sequence, as the reader keeps it:
  framing     the file is Trace.packet (field 1, length-delimited) records, each a whole
              TracePacket (no bytes left over);
  sequences   every packet has a trusted_packet_sequence_id; the first packet of each
              sequence sets SEQ_INCREMENTAL_STATE_CLEARED;
  needs       every packet that uses the sequence's incremental state (interned names,
              defaults: its track and its clock, the incremental clock) sets
              SEQ_NEEDS_INCREMENTAL_STATE;
  interning   every iid a packet uses (event name, annotation name, string value) was defined
              on the same sequence since its last clear, earlier in the file or in the same
              packet, and an iid is never defined again with another string;
  clocks      a timestamp on clock 64 comes after a ClockSnapshot of that sequence that makes
              64 incremental next to BOOTTIME (6); a snapshot packet carries nothing else the
              reader would skip (it stops at the snapshot); BOOTTIME never goes back across
              the snapshots of one sequence;
  tracks      uuids unique and not 0, each parent described before its child, every event on
              a described track; counter values only on counter tracks, slices only on
              others; no ProcessDescriptor or ThreadDescriptor whose pid/tid the trace lacks;
  slices      per track, in the reader's order (timestamp, then file order): no END without
              a BEGIN, none left open; each END closes the BEGIN the writer paired it with
              (file order), so every slice is what was written; slices on a track are
              disjoint or nested (end >= begin);
  ids         every "(TID)" in a track or slice name, every ", pid PID" and every integer
              "instead_tid" argument is a thread / process the machine's trace records (its
              trace's pid of that thread where the trace says one); no "(N)" at all for a
              machine whose trace has no thread ids.
Prints one line of counts; exits 1 with the first broken rule.
"""
import collections
import json
import re
import sys

# field numbers (perfetto_trace.proto)
TRACE_PACKET = 1
P_TIMESTAMP, P_CLOCK_ID, P_SEQ, P_FLAGS = 8, 58, 10, 13
P_TRACK_EVENT, P_INTERNED, P_DEFAULTS, P_SNAPSHOT, P_DESCRIPTOR = 11, 12, 59, 6, 60
P_COMPRESSED, P_CLEARED_OLD = 50, 41
SEQ_CLEARED, SEQ_NEEDS = 1, 2
CLOCK_BOOTTIME, CLOCK_INCR = 6, 64
INTERN_KINDS = {2: "event name", 3: "annotation name", 29: "string value"}
TYPE_BEGIN, TYPE_END, TYPE_COUNTER = 1, 2, 4


class Broken(Exception):
    pass


def need(cond, what):
    if not cond:
        raise Broken(what)


def varint(b, i):
    v = shift = 0
    while True:
        need(i < len(b), "a varint runs past its message")
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        if c < 0x80:
            return v, i
        shift += 7
        need(shift < 70, "a varint longer than 10 bytes")


def fields_wt(b):
    """A message's fields, [(number, wire type, value)]: int for wire type 0, the bytes of
    the value for the others."""
    out, i = [], 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt in (1, 5):
            n = 8 if wt == 1 else 4
            need(i + n <= len(b), "a fixed field past its message")
            v, i = b[i:i + n], i + n
        elif wt == 2:
            n, i = varint(b, i)
            need(i + n <= len(b), "a length-delimited field past its message")
            v, i = b[i:i + n], i + n
        else:
            raise Broken("wire type %d" % wt)
        out.append((num, wt, v))
    return out


def fields(b):
    """A message's fields, [(number, value)]: int for wire types 0/1/5 (little endian), bytes
    for 2."""
    return [(num, int.from_bytes(v, "little") if wt in (1, 5) else v)
            for num, wt, v in fields_wt(b)]


def get(fl, num, default=None):
    for n, v in fl:
        if n == num:
            return v
    return default


def alls(fl, num):
    return [v for n, v in fl if n == num]


def sint(v):
    """an int32/int64 field read as unsigned: its two's complement value"""
    return v - (1 << 64) if v >= 1 << 63 else v


def packets(path):
    data = open(path, "rb").read()
    need(data, "empty file")
    out = []
    for num, v in fields(data):
        need(num == TRACE_PACKET and isinstance(v, bytes), "a top-level field other than packet")
        fl = fields(v)
        need(get(fl, P_COMPRESSED) is None, "compressed packets (check the plain export)")
        out.append(fl)
    return out


NAME_TID = re.compile(r"^(?P<comm>.*) \((?P<tid>-?\d+)\)(?:, pid (?P<pid>\d+))?(?: #\d+)?$")
CPU_GUEST = re.compile(r"^(?P<m>.+) vCPU \d+: (?P<rest>.*)$")


def check(path, ids):
    pk = packets(path)
    seqs = {}                    # sequence -> state since its last clear
    tracks = {}                  # uuid -> {name, parent, counter, seq}
    events = []                  # (ts, file index, uuid, type, name, args)
    stats = collections.Counter()
    for idx, p in enumerate(pk):
        where = "packet %d" % idx
        sid = get(p, P_SEQ)
        need(sid, "%s: no trusted_packet_sequence_id" % where)
        flags = get(p, P_FLAGS, 0)
        need(get(p, P_CLEARED_OLD) is None, "%s: the deprecated incremental_state_cleared" % where)
        if sid not in seqs:
            need(flags & SEQ_CLEARED, "%s: first packet of sequence %d does not clear its state"
                 % (where, sid))
        if flags & SEQ_CLEARED:
            seqs[sid] = {"iids": {k: {} for k in INTERN_KINDS}, "clock": None, "track": None,
                         "incr": None, "boot": None}
            stats["clears"] += 1
        sq = seqs[sid]
        uses_state = False
        d = get(p, P_DEFAULTS)
        if d is not None:
            df = fields(d)
            sq["clock"] = get(df, 58)
            ted = get(df, 11)
            sq["track"] = get(fields(ted), 11) if ted is not None else None
        idata = get(p, P_INTERNED)
        if idata is not None:
            for num, en in fields(idata):
                need(num in INTERN_KINDS, "%s: interned field %d not used by vmscope" % (where, num))
                ef = fields(en)
                iid, s = get(ef, 1), get(ef, 2)
                need(iid, "%s: an interned %s without iid" % (where, INTERN_KINDS[num]))
                old = sq["iids"][num].get(iid)
                need(old is None or old == s, "%s: %s iid %d defined again, otherwise"
                     % (where, INTERN_KINDS[num], iid))
                sq["iids"][num][iid] = s
                stats["interned"] += 1
            uses_state = True    # (the reader skips interned data while the state is invalid)
        snap = get(p, P_SNAPSHOT)
        if snap is not None:
            for n in (P_TRACK_EVENT, P_DESCRIPTOR):
                need(get(p, n) is None, "%s: a snapshot packet carries field %d (skipped)" % (where, n))
            clocks = {}
            for c in alls(fields(snap), 1):
                cf = fields(c)
                clocks[get(cf, 1)] = (get(cf, 2, 0), get(cf, 3, 0), get(cf, 4, 1))
            need(CLOCK_BOOTTIME in clocks, "%s: a snapshot without BOOTTIME" % where)
            boot = clocks[CLOCK_BOOTTIME][0]
            need(sq["boot"] is None or boot >= sq["boot"], "%s: BOOTTIME goes back" % where)
            sq["boot"] = boot
            for cid, (ts, incr, unit) in clocks.items():
                need(unit == 1, "%s: clock %d not in ns" % (where, cid))
                if cid == CLOCK_INCR:
                    need(incr, "%s: clock 64 not incremental" % where)
                    sq["incr"] = ts
                else:
                    need(not incr and cid < 64, "%s: clock %d" % (where, cid))
            stats["clock snapshots"] += 1
        ts = None
        if get(p, P_TIMESTAMP) is not None:
            cid = get(p, P_CLOCK_ID)
            if cid is None:
                cid = sq["clock"]
                uses_state = uses_state or cid is not None
            raw = get(p, P_TIMESTAMP)
            if cid == CLOCK_INCR:
                need(sq["incr"] is not None, "%s: a time on clock 64 before its snapshot" % where)
                sq["incr"] += raw
                ts = sq["incr"]
                uses_state = True
                stats["incremental times"] += 1
            else:
                need(cid in (None, CLOCK_BOOTTIME), "%s: clock %s" % (where, cid))
                ts = raw
        desc = get(p, P_DESCRIPTOR)
        if desc is not None:
            tf = fields(desc)
            uuid = get(tf, 1)
            need(uuid, "%s: a track without uuid" % where)
            need(uuid not in tracks, "%s: track %d described twice" % (where, uuid))
            parent = get(tf, 5)
            need(parent is None or parent in tracks, "%s: track %d's parent not described before"
                 % (where, uuid))
            name = get(tf, 2)
            need(name, "%s: track %d has no name" % (where, uuid))
            name = name.decode("utf-8")
            for n, what in ((3, "ProcessDescriptor"), (4, "ThreadDescriptor")):
                sub = get(tf, n)
                if sub is not None:   # (none is written: then each must be the trace's own)
                    sf = fields(sub)
                    raise Broken("%s: a %s (pid %s, tid %s) on track %r" %
                                 (where, what, get(sf, 1), get(sf, 2), name))
            tracks[uuid] = {"name": name, "parent": parent, "counter": get(tf, 8) is not None}
            stats["tracks"] += 1
        te = get(p, P_TRACK_EVENT)
        if te is not None:
            ef = fields(te)
            uuid = get(ef, 11)
            if uuid is None:
                uuid = sq["track"]
                uses_state = True
            need(uuid in tracks, "%s: an event on an undescribed track %s" % (where, uuid))
            need(ts is not None, "%s: an event without time" % where)
            typ = get(ef, 9)
            name = None
            if get(ef, 10) is not None:
                uses_state = True
                name = sq["iids"][2].get(get(ef, 10))
                need(name is not None, "%s: event name iid %d not defined on sequence %d"
                     % (where, get(ef, 10), sid))
                name = name.decode("utf-8")
            args = {}
            for a in alls(ef, 4):
                af = fields(a)
                uses_state = True
                key = sq["iids"][3].get(get(af, 1))
                need(key is not None, "%s: annotation name iid %s not defined" % (where, get(af, 1)))
                key = key.decode("utf-8")
                if get(af, 17) is not None:
                    v = sq["iids"][29].get(get(af, 17))
                    need(v is not None, "%s: string value iid %d not defined" % (where, get(af, 17)))
                    args[key] = v.decode("utf-8")
                elif get(af, 4) is not None:
                    args[key] = sint(get(af, 4))
                else:
                    args[key] = get(af, 3, get(af, 7))
            if typ == TYPE_COUNTER:
                need(tracks[uuid]["counter"], "%s: a counter value on slice track %r"
                     % (where, tracks[uuid]["name"]))
                need(get(ef, 44) is not None or get(ef, 30) is not None,
                     "%s: a counter event without value" % where)
                stats["counter values"] += 1
            else:
                need(typ in (TYPE_BEGIN, TYPE_END), "%s: event type %s" % (where, typ))
                need(not tracks[uuid]["counter"], "%s: a slice on counter track %r"
                     % (where, tracks[uuid]["name"]))
                need(typ == TYPE_END or name, "%s: a BEGIN without name" % where)
                events.append((ts, idx, uuid, typ, name, args))
        if uses_state:
            need(flags & SEQ_NEEDS, "%s: uses sequence %d's incremental state without "
                 "SEQ_NEEDS_INCREMENTAL_STATE" % (where, sid))
            stats["packets needing state"] += 1
    slices = check_slices(tracks, events, stats)
    check_ids(tracks, slices, ids, stats)
    return stats


def check_slices(tracks, events, stats):
    """Pair BEGIN/END as the writer meant (file order per track) and as the reader does
    (sorted by time, then file order): the same slices, disjoint or nested."""
    meant, stack = {}, collections.defaultdict(list)
    for ts, idx, uuid, typ, name, args in events:       # file order
        if typ == TYPE_BEGIN:
            stack[uuid].append(idx)
        else:
            need(stack[uuid], "END without BEGIN (file order) on %r" % tracks[uuid]["name"])
            meant[stack[uuid].pop()] = idx
    read, stack = {}, collections.defaultdict(list)
    time = {}
    for ts, idx, uuid, typ, name, args in sorted(events, key=lambda e: (e[0], e[1])):
        time[idx] = ts
        if typ == TYPE_BEGIN:
            stack[uuid].append(idx)
        else:
            need(stack[uuid], "an END at %d on %r closes nothing" % (ts, tracks[uuid]["name"]))
            read[stack[uuid].pop()] = idx
    for uuid, st in stack.items():
        need(not st, "a slice left open on %r" % tracks[uuid]["name"])
    need(meant == read, "the reader pairs BEGIN/END otherwise than written: %s" %
         sorted(set(meant.items()) ^ set(read.items()))[:3])
    per = collections.defaultdict(list)
    info = {e[1]: e for e in events}
    for b, e in read.items():
        uuid, name, args = info[b][2], info[b][4], {**info[b][5], **info[e][5]}
        need(time[e] >= time[b], "a slice ends before it begins on %r" % tracks[uuid]["name"])
        per[uuid].append((time[b], time[e], b, name, args))
    for uuid, sl in per.items():
        open_ = []
        for s, e, b, name, args in sorted(sl, key=lambda x: (x[0], -x[1], x[2])):
            while open_ and open_[-1] <= s:
                open_.pop()
            need(not open_ or e <= open_[-1], "slices cross on %r at %d" % (tracks[uuid]["name"], s))
            open_.append(e)
        stats["slices"] += len(sl)
    return per


def machine_of(tracks, uuid):
    while tracks[uuid]["parent"] is not None:
        uuid = tracks[uuid]["parent"]
    return tracks[uuid]["name"].rsplit(" (", 1)[0]


def check_ids(tracks, slices, ids, stats):
    def say(machine, tid, pid, what):
        want = ids.get(machine)
        need(want is not None, "no ids given for machine %r (%s)" % (machine, what))
        need(want["tids"] is not None, "%s: a tid (%d) where %s's trace has none" % (what, tid, machine))
        need(tid in want["tids"], "%s: tid %d is not a thread of %s's trace" % (what, tid, machine))
        if pid is not None:
            need(want["pids"].get(tid) == pid, "%s: pid %d, the trace says %s" %
                 (what, pid, want["pids"].get(tid)))
            stats["pids checked"] += 1
        stats["tids checked"] += 1

    def name_ids(machine, name, what):
        m = NAME_TID.match(name)
        if m:
            say(machine, int(m["tid"]), int(m["pid"]) if m["pid"] else None, what)
        else:
            need(not re.search(r"\(\d+\)", name), "%s: an id in a name not understood" % what)

    hosts = [tracks[u]["name"].rsplit(" (", 1)[0] for u in tracks
             if tracks[u]["parent"] is None and "host" in tracks[u]["name"].rsplit(" (", 1)[1]]
    for u, t in tracks.items():
        m = machine_of(tracks, u)
        if t["parent"] is not None and not t["counter"]:
            name_ids(m, t["name"], "track %r of %s" % (t["name"], m))
        for s, e, b, name, args in slices.get(u, []):
            what = "slice %r on %r of %s" % (name, t["name"], m)
            g = CPU_GUEST.match(name)
            if g and re.fullmatch(r"CPU \d+", t["name"]):
                if g["rest"] != "?":
                    name_ids(g["m"], g["rest"], what)
            elif re.fullmatch(r"CPU \d+", t["name"]):
                name_ids(m, name, what)
            if "instead_tid" in args:   # a host thread that ran instead (the guest's host)
                need(len(hosts) == 1, "instead_tid with %d hosts" % len(hosts))
                say(hosts[0], args["instead_tid"], None, what + " instead_tid")
                name_ids(hosts[0], args["instead"], what + " instead")


def main():
    ids = {}
    argv = sys.argv[1:]
    path = argv.pop(0)
    while argv:
        opt = argv.pop(0)
        need(opt == "--ids", "usage: check_perfetto_rules.py TRACE.pftrace [--ids MACHINE=FILE]...")
        m, f = argv.pop(0).split("=", 1)
        d = json.load(open(f))
        ids[m] = {"tids": None if d["tids"] is None else set(d["tids"]),
                  "pids": {int(k): v for k, v in d.get("pids", {}).items()}}
    try:
        stats = check(path, ids)
    except Broken as e:
        print("broken rule: %s" % e)
        sys.exit(1)
    print("# " + ", ".join("%s %d" % kv for kv in sorted(stats.items())))


if __name__ == "__main__":
    main()
