"""ClickHouse servers for the tests: each on loopback, on free ports, with its own config and
data directory under the test's temporary directory (the config of
/work/shared/docs/clickhouse.md), stopped by stop() (the tests call it in `finally` and at
exit). Optionally members of a cluster `fleet` of every server started with cluster=True."""
import atexit, os, shutil, signal, socket, subprocess, time, urllib.parse, urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def binary():
    return shutil.which("clickhouse-server") or (
        "/usr/sbin/clickhouse-server" if os.path.exists("/usr/sbin/clickhouse-server") else None)


class Server:
    def __init__(self, root, shards=None):
        """shards: [(host, tcp_port)] of the cluster `fleet` this server knows, or None"""
        self.root = root
        self.http, self.tcp, self.inter = free_port(), free_port(), free_port()
        self.shards = shards
        self.proc = None
        for d in ("log", "data", "tmp"):
            os.makedirs(os.path.join(root, d), exist_ok=True)

    def config(self):
        remote = ""
        if self.shards:
            remote = "<remote_servers><fleet>%s</fleet></remote_servers>" % "".join(
                "<shard><replica><host>%s</host><port>%d</port></replica></shard>" % s
                for s in self.shards)
        users = "/etc/clickhouse-server/users.xml"
        return """<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>{r}/log/server.log</log><errorlog>{r}/log/err.log</errorlog></logger>
  <http_port>{h}</http_port><tcp_port>{t}</tcp_port><interserver_http_port>{i}</interserver_http_port>
  <listen_host>127.0.0.1</listen_host>
  <path>{r}/data/</path><tmp_path>{r}/tmp/</tmp_path>
  <users_config>{u}</users_config>
  <default_profile>default</default_profile><default_database>default</default_database>
  <mark_cache_size>5368709</mark_cache_size>
  <!-- ClickHouse 18.16 (Debian 12) keeps a merge's tmp_merge_* directory after a SIGKILL and
       retries that merge, failing ("already exists"), before any mutation of the table, until
       the directory is older than this (default a day): the kill test's rerun deletes the cut
       capture's rows by a mutation, which would wait behind it (docs/fleet.md) -->
  <merge_tree><temporary_directories_lifetime>30</temporary_directories_lifetime></merge_tree>
  {remote}
</yandex>
""".format(r=self.root, h=self.http, t=self.tcp, i=self.inter, u=users, remote=remote)

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.http

    def start(self, timeout=60):
        with open(os.path.join(self.root, "config.xml"), "w") as f:
            f.write(self.config())
        self.proc = subprocess.Popen([binary(), "--config-file=" + os.path.join(self.root, "config.xml")],
                                     cwd=self.root, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        _running.append(self)
        t0 = time.time()
        while time.time() - t0 < timeout:
            try:
                if self.query("SELECT 1").strip() == "1":
                    return
            except OSError:
                pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise RuntimeError("clickhouse-server did not start (see %s/log)" % self.root)

    def query(self, sql):
        req = urllib.request.Request(self.url + "/", data=sql.encode())
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.read().decode()

    def rows(self, sql):
        """the result as lists of cells (TabSeparated unescaped; \\N is None)"""
        out = []
        for line in self.query(sql + " FORMAT TabSeparated").splitlines():
            row = []
            for cell in line.split("\t"):
                if cell == "\\N":
                    row.append(None)
                    continue
                row.append(unescape(cell))
            out.append(row)
        return out

    def kill(self):
        """the server stops at once (SIGKILL), as a crash or a power cut would"""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self in _running:
            _running.remove(self)


_running = []


def unescape(cell):
    """TabSeparated's backslash escapes undone"""
    out, i = [], 0
    while i < len(cell):
        c = cell[i]
        if c == "\\" and i + 1 < len(cell):
            i += 1
            c = {"t": "\t", "n": "\n", "r": "\r", "0": "\0", "b": "\b", "f": "\f"}.get(cell[i], cell[i])
        out.append(c)
        i += 1
    return "".join(out)


@atexit.register
def _stop_all():
    for s in list(_running):
        s.stop()
