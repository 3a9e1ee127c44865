#!/usr/bin/env python3
"""Check a vmscope export against vmscope's own tables on the same input.

usage: check_export.py DECODED.txt CHROME.json PCPUS.csv VCPUS.csv THREADS.csv EXITS.json REPORT.json
       check_export.py --slices DECODED.txt   (every slice and counter value, one a line, sorted:
                                               two exports that show the same print the same)

DECODED.txt is `protoc --decode=perfetto.protos.Trace` of the .pftrace (Perfetto's own proto
decodes it: the wire format is right). From the decoded packets this rebuilds, keeping each
packet sequence's incremental state as trace_processor does (cleared by the sequence's first
packet; TracePacketDefaults: the track of its events, their clock; a ClockSnapshot defining
clock 64 as incremental: a timestamp on it is a delta from the sequence's last; interned event
names, argument names and string values, each defined before its use on that sequence), the
tracks (descriptors: uuid, parent, name; a group is a root track) and the slices (BEGIN/END per track, in time
order as trace_processor sorts them: by timestamp, then file order), and compares:
  - one group per machine; per host CPU in `pcpus` a "CPU n" track whose slices are exactly
    the `pcpus` rows (start, end) but the unknown ones (machine "unknown", no vCPU, no tid),
    which are no slice; per vCPU in `vcpus` a "vCPU n" track whose slices are its
    rows (start, end, state) and a "vCPU n exits" track with one slice per VM exit (the
    counts of `exits`), two counters per vCPU;
  - every overlay of `threads` is a slice on its guest thread's track, nested in a
    "running on vCPU n" slice of that track;
  - per vCPU and host thread, the time of the "instead of" slices equals the steal of
    `report` (its top list, --top large);
  - the counters: sum of exits/s x time = the number of exits begun; sum of steal % x time = the
    preempted time of `vcpus`;
  - every BEGIN is ended on its track, and no END comes without a BEGIN;
and that the Chrome JSON parses, has the same slices per track name, and its slices nest.
"""
import collections
import csv
import json
import re
import sys


def parse_text(path):
    """protoc's text format -> list of packets as nested dicts (field -> list of values)."""
    root = {}
    stack = [root]
    with open(path) as f:
        for line in f:
            s = line.strip()
            if not s:
                continue
            if s.endswith("{"):
                d = {}
                stack[-1].setdefault(s[:-1].strip(), []).append(d)
                stack.append(d)
            elif s == "}":
                stack.pop()
            else:
                k, v = s.split(":", 1)
                v = v.strip()
                if v.startswith('"'):
                    v = bytes(v[1:-1], "utf-8").decode("unicode_escape").encode("latin-1").decode("utf-8")
                stack[-1].setdefault(k, []).append(v)
    return root.get("packet", [])


def rows_of(path):
    """CSV rows; the time columns named start/end (vcpus and threads say start_ns/end_ns)."""
    rows = list(csv.DictReader(open(path)))
    for r in rows:
        for k in ("start", "end"):
            if k + "_ns" in r:
                r[k] = r[k + "_ns"]
    return rows


def one(d, k, default=None):
    v = d.get(k)
    return v[0] if v else default


def rebuild(packets):
    """The tracks (uuid -> descriptor), slices (uuid -> [(start, end, name, depth, args)]),
    counters (uuid -> [(ts, value)]) and statistics of decoded packets."""
    tracks = {}
    seqs = {}           # sequence id -> its incremental state, as trace_processor keeps it
    events = []          # (ts, order, uuid, type, name, args)
    counters = collections.defaultdict(list)
    stats = collections.Counter()
    for i, p in enumerate(packets):
        sid = one(p, "trusted_packet_sequence_id")
        assert sid is not None, "packet without a sequence"
        flags = int(one(p, "sequence_flags", "0"))
        if sid not in seqs:
            # the first packet of a sequence clears its incremental state
            assert flags & 1, "sequence %s does not start by clearing its state" % sid
        if flags & 1:
            seqs[sid] = {"names": {}, "keys": {}, "strings": {}, "clock": None,
                         "last": None, "track": None}
        sq = seqs[sid]
        for d in p.get("trace_packet_defaults", []):
            sq["clock"] = one(d, "timestamp_clock_id")
            for ted in d.get("track_event_defaults", []):
                sq["track"] = one(ted, "track_uuid")
        for cs in p.get("clock_snapshot", []):
            clocks = {one(c, "clock_id"): c for c in cs.get("clocks", [])}
            assert "6" in clocks, "a clock snapshot without BOOTTIME"
            for cid, c in clocks.items():
                if cid == "64":
                    assert one(c, "is_incremental") == "true"
                    # clock 64 is BOOTTIME + (its value - BOOTTIME's) from here
                    assert one(c, "timestamp") == one(clocks["6"], "timestamp")
                    sq["last"] = int(one(c, "timestamp"))
            stats["clock snapshots"] += 1
        for idata in p.get("interned_data", []):
            for field, what in (("event_names", "names"), ("debug_annotation_names", "keys"),
                                ("debug_annotation_string_values", "strings")):
                for en in idata.get(field, []):
                    iid = one(en, "iid")
                    assert iid not in sq[what], "iid %s interned twice on %s" % (iid, sid)
                    sq[what][iid] = one(en, "name", one(en, "str"))
                    stats["interned"] += 1
        for td in p.get("track_descriptor", []):
            uuid = one(td, "uuid")
            assert uuid not in tracks, "track %s described twice" % uuid
            # a machine is a root track (no process: it has no pid), its tracks children
            assert "process" not in td and "thread" not in td, "a made-up pid or tid"
            tracks[uuid] = {
                "name": one(td, "name"), "parent": one(td, "parent_uuid"),
                "group": one(td, "parent_uuid") is None, "counter": "counter" in td,
            }
        if "timestamp" in p:
            cid = one(p, "timestamp_clock_id", sq["clock"])
            ts = int(one(p, "timestamp"))
            if cid == "64":           # a delta from the sequence's last time
                assert sq["last"] is not None, "incremental time before its clock snapshot"
                ts = sq["last"] = sq["last"] + ts
                stats["incremental times"] += 1
            else:
                assert cid in (None, "6"), cid
        for te in p.get("track_event", []):
            uuid = one(te, "track_uuid", sq["track"])
            assert uuid in tracks, "event before its track's descriptor"
            typ = one(te, "type")
            if typ == "TYPE_COUNTER":
                counters[uuid].append((ts, float(one(te, "double_counter_value"))))
                continue
            name = None
            if typ == "TYPE_SLICE_BEGIN":
                assert one(te, "name_iid") in sq["names"], "name used before it is interned"
                name = sq["names"][one(te, "name_iid")]
            args = {}
            for a in te.get("debug_annotations", []):
                ak = sq["keys"][one(a, "name_iid")]
                if "string_value_iid" in a:
                    a = dict(a, string_value=[sq["strings"][one(a, "string_value_iid")]])
                args[ak] = a
            events.append((ts, i, uuid, typ, name, args))
    # slices per track, matched BEGIN/END in time order (stable on file order)
    events.sort(key=lambda e: (e[0], e[1]))
    stacks = collections.defaultdict(list)
    slices = collections.defaultdict(list)   # uuid -> [(start, end, name, depth, args)]
    for ts, _, uuid, typ, name, args in events:
        if typ == "TYPE_SLICE_BEGIN":
            stacks[uuid].append((ts, name, args))
        else:
            assert typ == "TYPE_SLICE_END", typ
            assert stacks[uuid], "END without BEGIN on %s" % tracks[uuid]["name"]
            s, n, a = stacks[uuid].pop()
            slices[uuid].append((s, ts, n, len(stacks[uuid]), {**a, **args}))
    for uuid, st in stacks.items():
        assert not st, "unended slice on %s" % tracks[uuid]["name"]
    return tracks, slices, counters, stats


def print_slices(dec):
    """One line per slice and counter value, by track path (group / track), sorted."""
    tracks, slices, counters, _ = rebuild(parse_text(dec))
    def path(u):
        t = tracks[u]
        return (tracks[t["parent"]]["name"] + " / " if t["parent"] else "") + t["name"]
    lines = []
    for u, sl in slices.items():
        for s, e, n, d, a in sl:
            args = sorted((k, sorted((f, v) for f, v in x.items()
                                                if f not in ("name_iid", "string_value_iid")))
                          for k, x in a.items())
            lines.append("%s\t%d\t%d\t%d\t%s\t%s" % (path(u), s, e, d, n, args))
    for u, c in counters.items():
        lines.extend("%s\t%d\t%r" % (path(u), t, v) for t, v in c)
    lines.extend("%s\t(track)" % path(u) for u in tracks)
    print("\n".join(sorted(lines)))


def main():
    if sys.argv[1] == "--slices":
        print_slices(sys.argv[2])
        return
    dec, chrome, pcpus_csv, vcpus_csv, threads_csv, exits_json, report_json = sys.argv[1:8]
    packets = parse_text(dec)
    assert packets, "no packet"
    tracks, slices, counters, stats = rebuild(packets)
    groups = {u: t["name"] for u, t in tracks.items() if t["group"]}
    def group_machine(uuid):
        return groups[tracks[uuid]["parent"]].rsplit(" (", 1)[0]
    by_name = {}
    for u, t in tracks.items():
        if not t["group"]:
            by_name[(group_machine(u), t["name"])] = u
    kinds = collections.Counter()

    # host CPUs: the fused view
    P = rows_of(pcpus_csv)
    want = collections.defaultdict(list)
    for r in P:
        if r["machine"] == "unknown" and r["vcpu"] == "" and r["tid"] == "":
            kinds["unknown cpu rows, no slice"] += 1
            continue
        want[(r["host"], "CPU " + r["cpu"])].append((int(r["start"]), int(r["end"])))
    for k, rows in want.items():
        got = sorted((s, e) for s, e, *_ in slices[by_name[k]])
        assert got == sorted(rows), (k, len(got), len(rows))
        kinds["cpu slices"] += len(got)
    cpu_tracks = {k for k in by_name if re.fullmatch(r"CPU \d+", k[1])}
    assert cpu_tracks == set(want), (cpu_tracks ^ set(want))

    # vCPUs: states, exits, counters
    V = rows_of(vcpus_csv)
    vw = collections.defaultdict(list)
    for r in V:
        vw[(r["machine"], "vCPU " + r["vcpu"])].append((int(r["start"]), int(r["end"]), r["state"]))
    t_end = max(int(r["end"]) for r in V)
    for k, rows in vw.items():
        got = sorted((s, e, n) for s, e, n, *_ in slices[by_name[k]])
        assert got == sorted(rows), (k, len(got), len(rows))
        kinds["vcpu state slices"] += len(got)
    vtracks = {k for k in by_name if k[1].startswith("vCPU ") and k[1].count(" ") == 1}
    assert vtracks == set(vw), vtracks ^ set(vw)
    E = json.load(open(exits_json))
    E = E["rows"] if isinstance(E, dict) else E
    ecount, unfinished = collections.Counter(), collections.Counter()
    for r in E:
        ecount[(r["machine"], "vCPU %d" % r["vcpu"])] += r["count"]
        unfinished[(r["machine"], "vCPU %d" % r["vcpu"])] += r.get("unfinished", 0)
    for k in vw:
        ex = slices[by_name[(k[0], k[1] + " exits")]]
        # `exits` counts every exit; one still open when the trace ends or whose end was
        # lost says so in its "end" argument, and is "unfinished" in `exits`
        ended = [x for x in ex if "end" not in x[4]]
        assert len(ex) == ecount[k], (k, len(ex), ecount[k])
        assert len(ex) - len(ended) == unfinished[k], (k, len(ex), len(ended), unfinished[k])
        kinds["exit slices"] += len(ex)
        # counters: sum(value x time) against the tables
        for cname, total in (("exits/s", len(ex)),   # every exit begun
                             ("steal %", sum(e - s for s, e, st in vw[k] if st == "preempted"))):
            c = counters[by_name[(k[0], k[1] + " " + cname)]]
            assert c, (k, cname)
            acc = 0.0
            for (t0, v), (t1, _) in zip(c, c[1:] + [(t_end, 0)]):
                acc += v * (t1 - t0)
            acc /= 1e9 if cname == "exits/s" else 100.0
            assert abs(acc - total) <= 1e-6 * max(total, 1) + 1e-3, (k, cname, acc, total)
            kinds["counters"] += 1

    # guest threads: every overlay nested in a running slice of its thread
    T = rows_of(threads_csv)
    ov = collections.defaultdict(list)
    for r in T:
        ov[(r["machine"], int(r["tid"]))].append((int(r["start"]), int(r["end"]), r["reason"]))
    thread_tracks = {}
    for (m, n), u in by_name.items():
        if n.endswith(")") and m in {k[0] for k in vw}:
            thread_tracks[(m, int(n.rsplit("(", 1)[1][:-1]))] = u
    for k, rows in ov.items():
        sl = slices[thread_tracks[k]]
        got = sorted((s, e, n.split(":")[0]) for s, e, n, d, a in sl if not n.startswith("running"))
        assert got == sorted(rows), (k, got[:3], sorted(rows)[:3])
        running = [(s, e) for s, e, n, d, a in sl if n.startswith("running")]
        for s, e, n, d, a in sl:
            if not n.startswith("running"):
                assert d == 1 and any(rs <= s and e <= re for rs, re in running), (k, s, e, n)
        kinds["overlay slices"] += len(got)

    # steal: host threads that ran instead of a preempted vCPU
    R = json.load(open(report_json))
    hosts = {g.rsplit(" (", 1)[0] for g in groups.values() if "host" in g.rsplit(" (", 1)[1]}
    want_steal = collections.Counter()
    for m in R["machines"]:
        for v in m.get("vcpus") or []:
            for s in v.get("steal") or []:
                want_steal[(m["name"], v["vcpu"], s["tid"])] += s["ns"]
    got_steal = collections.Counter()
    for (m, n), u in by_name.items():
        if m in hosts and "(" in n:
            tid = int(n.split("(")[-1].split(")")[0])
            for s, e, name, d, a in slices[u]:
                g, vc = name[len("instead of "):].rsplit(" vCPU ", 1)
                got_steal[(g, int(vc), tid)] += e - s
                kinds["steal slices"] += 1
    got_steal = +got_steal
    assert got_steal == +want_steal, (sorted(got_steal.items())[:4], sorted(want_steal.items())[:4])

    # Chrome JSON: parses, the same slices per track, and they nest per track
    d = json.load(open(chrome))
    tname, pname = {}, {}
    for e in d["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            tname[(e["pid"], e["tid"])] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "process_name":
            pname[e["pid"]] = e["args"]["name"].rsplit(" (", 1)[0]
    per = collections.defaultdict(list)
    for e in d["traceEvents"]:
        if e["ph"] == "X":
            s = round(e["ts"] * 1000)
            per[(pname[e["pid"]], tname[(e["pid"], e["tid"])])].append((s, s + round(e["dur"] * 1000), e["name"]))
    for k, sl in per.items():
        u = by_name[k]
        assert sorted(sl) == sorted((s, e, n) for s, e, n, *_ in slices[u]), k
        open_ = []
        for s, e, n in sorted(sl, key=lambda x: (x[0], -(x[1] - x[0]))):
            while open_ and open_[-1] <= s:
                open_.pop()
            assert not open_ or e <= open_[-1], ("slices cross on", k, s, e)
            open_.append(e)
    assert sum(len(v) for v in per.values()) == sum(len(v) for v in slices.values())
    assert stats["incremental times"] > 0 and stats["clock snapshots"] > 0, stats
    kinds.update(stats)
    print("# " + ", ".join("%s %d" % kv for kv in sorted(kinds.items())) +
          ", tracks %d" % len(tracks))


if __name__ == "__main__":
    main()
