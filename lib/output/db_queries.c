/* The fleet queries (docs/fleet.md, which holds the same SQL; a test runs what it holds),
 * each in SQLite's and in ClickHouse 18.16's dialect, with the same result columns and the
 * same order. They join `captures`, so a capture whose load did not complete is not seen.
 * ClickHouse 18.16 has one JOIN per SELECT and runs a JOIN's left side where it is: on a
 * cluster, the left side is a subquery, so the join runs on the server asked (the Distributed
 * tables are named <t>_all there: cmd-db.c renames them).
 * Percentiles are nearest rank, as everywhere in vmscope: the sample of rank ceil(0.99 n). */
#include <string.h>

#include "vmscope/db.h"

static const struct vms_db_query queries[] = {
	{ "top-steal", "Which hosts steal the most from their guests?",
	  "SELECT h.host AS host, h.steal_ns AS steal_ns, v.vcpu_ns AS vcpu_ns,\n"
	  "       h.steal_ns * 10000 / v.vcpu_ns AS steal_bp\n"
	  "FROM (SELECT c.host AS host, SUM(s.ns) AS steal_ns\n"
	  "      FROM steal s JOIN captures c ON c.capture = s.capture GROUP BY c.host) h\n"
	  "JOIN (SELECT c.host AS host, SUM(v.last_ns - v.first_ns) AS vcpu_ns\n"
	  "      FROM vcpus v JOIN captures c ON c.capture = v.capture GROUP BY c.host) v\n"
	  "  ON v.host = h.host\n"
	  "ORDER BY steal_ns DESC, host LIMIT 20",
	  "SELECT host, steal_ns, vcpu_ns, intDiv(steal_ns * 10000, vcpu_ns) AS steal_bp\n"
	  "FROM (SELECT host, sum(ns) AS steal_ns\n"
	  "      FROM (SELECT capture, ns FROM steal)\n"
	  "      ALL INNER JOIN (SELECT capture, host FROM captures) USING capture GROUP BY host)\n"
	  "ALL INNER JOIN\n"
	  "     (SELECT host, sum(last_ns - first_ns) AS vcpu_ns\n"
	  "      FROM (SELECT capture, first_ns, last_ns FROM vcpus)\n"
	  "      ALL INNER JOIN (SELECT capture, host FROM captures) USING capture GROUP BY host)\n"
	  "USING host\n"
	  "ORDER BY steal_ns DESC, host LIMIT 20" },
	{ "exit-storms", "Which guests hit exit storms, of which reason, and from which code?",
	  "SELECT c.host AS host, x.machine AS guest, x.name AS reason, x.code AS code,\n"
	  "       x.exits AS exits\n"
	  "FROM (SELECT capture, machine, name, COALESCE(symbol, '?') AS code, COUNT(*) AS exits\n"
	  "      FROM exits GROUP BY capture, machine, name, code) x\n"
	  "JOIN (SELECT DISTINCT capture, machine, name\n"
	  "      FROM (SELECT capture, machine, name FROM exits\n"
	  "            GROUP BY capture, machine, name, start_ns / 100000000\n"
	  "            HAVING COUNT(*) >= 2500)) w\n"
	  "  ON w.capture = x.capture AND w.machine = x.machine AND w.name = x.name\n"
	  "JOIN captures c ON c.capture = x.capture\n"
	  "ORDER BY exits DESC, host, guest, reason, code LIMIT 20",
	  "SELECT host, guest, reason, code, count() AS exits\n"
	  "FROM (SELECT capture, guest, reason, code\n"
	  "      FROM (SELECT capture, machine AS guest, name AS reason,\n"
	  "                   ifNull(symbol, '?') AS code FROM exits)\n"
	  "      ALL INNER JOIN\n"
	  "           (SELECT DISTINCT capture, guest, reason\n"
	  "            FROM (SELECT capture, machine AS guest, name AS reason,\n"
	  "                         intDiv(start_ns, 100000000) AS win FROM exits\n"
	  "                  GROUP BY capture, guest, reason, win HAVING count() >= 2500))\n"
	  "      USING (capture, guest, reason))\n"
	  "ALL INNER JOIN (SELECT capture, host FROM captures) USING capture\n"
	  "GROUP BY host, guest, reason, code\n"
	  "ORDER BY exits DESC, host, guest, reason, code LIMIT 20" },
	{ "wakeup-p99", "What is the p99 wake-up latency of each host's guests?",
	  "SELECT host, guest, n AS wakeups, latency_ns AS p99_ns\n"
	  "FROM (SELECT c.host AS host, w.machine AS guest, w.latency_ns AS latency_ns,\n"
	  "             ROW_NUMBER() OVER (PARTITION BY c.host, w.machine\n"
	  "                                ORDER BY w.latency_ns) AS rk,\n"
	  "             COUNT(*) OVER (PARTITION BY c.host, w.machine) AS n\n"
	  "      FROM wakeups w JOIN captures c ON c.capture = w.capture)\n"
	  "WHERE rk = (n * 99 + 99) / 100\n"
	  "ORDER BY p99_ns DESC, host, guest",
	  "SELECT host, guest, count() AS wakeups,\n"
	  "       arraySort(groupArray(latency_ns))[intDiv(count() * 99 + 99, 100)] AS p99_ns\n"
	  "FROM (SELECT capture, machine AS guest, latency_ns FROM wakeups)\n"
	  "ALL INNER JOIN (SELECT capture, host FROM captures) USING capture\n"
	  "GROUP BY host, guest\n"
	  "ORDER BY p99_ns DESC, host, guest" },
	{ "wakeup-p99-kernel", "Is the p99 wake-up latency worse on one host kernel than another?",
	  "SELECT r.kernel AS kernel, h.hosts AS hosts, r.n AS wakeups, r.latency_ns AS p99_ns\n"
	  "FROM (SELECT COALESCE(c.kernel, '?') AS kernel, w.latency_ns AS latency_ns,\n"
	  "             ROW_NUMBER() OVER (PARTITION BY COALESCE(c.kernel, '?')\n"
	  "                                ORDER BY w.latency_ns) AS rk,\n"
	  "             COUNT(*) OVER (PARTITION BY COALESCE(c.kernel, '?')) AS n\n"
	  "      FROM wakeups w JOIN captures c ON c.capture = w.capture) r\n"
	  "JOIN (SELECT COALESCE(c.kernel, '?') AS kernel, COUNT(DISTINCT c.host) AS hosts\n"
	  "      FROM wakeups w JOIN captures c ON c.capture = w.capture\n"
	  "      GROUP BY COALESCE(c.kernel, '?')) h ON h.kernel = r.kernel\n"
	  "WHERE r.rk = (r.n * 99 + 99) / 100\n"
	  "ORDER BY p99_ns DESC, kernel",
	  "SELECT kernel, uniqExact(host) AS hosts, count() AS wakeups,\n"
	  "       arraySort(groupArray(latency_ns))[intDiv(count() * 99 + 99, 100)] AS p99_ns\n"
	  "FROM (SELECT capture, latency_ns FROM wakeups)\n"
	  "ALL INNER JOIN (SELECT capture, host, ifNull(kernel, '?') AS kernel FROM captures)\n"
	  "USING capture\n"
	  "GROUP BY kernel\n"
	  "ORDER BY p99_ns DESC, kernel" },
};

uint32_t vms_db_nr_queries(void)
{
	return sizeof queries / sizeof queries[0];
}

const struct vms_db_query *vms_db_query_at(uint32_t i)
{
	return i < vms_db_nr_queries() ? &queries[i] : NULL;
}

const struct vms_db_query *vms_db_query_named(const char *name)
{
	for (uint32_t i = 0; i < vms_db_nr_queries(); i++)
		if (!strcmp(queries[i].name, name))
			return &queries[i];
	return NULL;
}
