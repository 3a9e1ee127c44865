#!/usr/bin/env python3
"""Every command line of docs/recording.md against the installed tool's own usage (TAP).

The commands are the lines of the fenced ```sh blocks, one per line. For each:
- its program must be installed (else a skip naming it);
- every option it uses (-x, --long, --long=value) must be one the tool's own --help text
  names: `trace-cmd SUB --help`, `lttng SUB --help` (the man page), `xentrace --help`,
  `vmscope SUB --help`, `PROG --help` for any other program;
- trace-cmd's -C clock must be a clock this kernel offers (`trace-cmd list -C`) or
  trace-cmd's own "tsc2nsec"; its -e systems must be in available_events where tracefs is
  readable, except kvm (no /dev/kvm on these machines: said as a note);
- the lttng commands run for real, in order, against a private lttng-sessiond (its own
  LTTNG_HOME in a temporary directory; as root, sessiond and client run as nobody so the
  machine's root session daemon is untouched): an argument lttng refuses is exit status 1
  or 2 with "Unrecognized"/"Unknown"/"specify" on stderr, while the kernel tracer being
  unavailable here (no lttng-modules) is not a failure of the command line.
`trace-cmd record` and `xentrace` cannot run here (no KVM, no hypervisor); `trace-cmd
extract` runs in test_recording_info.sh.

usage: test_recording_docs.py DOC VMSCOPE
"""
import os, re, shlex, shutil, signal, subprocess, sys, tempfile, time

doc, vmscope = sys.argv[1], sys.argv[2]
n = 0


def ok(name, cond=True, why=""):
    global n
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, name))
    if not cond and why:
        print("# " + why.replace("\n", "\n# "))


def skip(name, why):
    global n
    n += 1
    print("ok %d - %s # SKIP %s" % (n, name, why))


def commands(path):
    out, inside = [], False
    for line in open(path):
        s = line.rstrip("\n")
        if s.startswith("```"):
            inside = s.strip() == "```sh"
            continue
        if inside and s.strip() and not s.lstrip().startswith("#"):
            out.append(s.strip())
    return out


def run(argv, env=None, timeout=30, sigpipe=True):
    # sigpipe=False: the child keeps Python's SIGPIPE ignored. An unprivileged
    # lttng-sessiond 2.13 at times closes a client's socket on kernel-domain requests
    # ("sendmsg: Broken pipe", "Fatal error of the session daemon"): the client, which
    # parsed its arguments before connecting, then says so instead of dying of SIGPIPE
    try:
        p = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout,
                           restore_signals=sigpipe)
        return p.returncode, p.stdout + p.stderr
    except (OSError, subprocess.TimeoutExpired) as e:
        return -1, str(e)


def xentrace_path():
    # Debian's /usr/sbin/xentrace is a wrapper that needs a hypervisor even for --help; the
    # program itself is in xen-utils-4.x
    for d in sorted(os.listdir("/usr/lib"), reverse=True):
        p = os.path.join("/usr/lib", d, "bin", "xentrace")
        if d.startswith("xen-") and os.access(p, os.X_OK):
            return p
    return None


help_cache = {}


def help_text(prog, sub):
    key = (prog, sub)
    if key in help_cache:
        return help_cache[key]
    env = dict(os.environ, MANPAGER="cat", PAGER="cat", MANWIDTH="200")
    if prog == "xentrace":
        p = xentrace_path()
        text = run([p, "--help"])[1] if p else None
    elif prog == "trace-cmd":
        text = run(["trace-cmd", sub, "--help"])[1]
    elif prog == "lttng":
        st, text = run(["lttng", sub, "--help"], env=env)
        if st != 0 or len(text) < 200:
            text = None   # lttng shows its man page: man missing
    elif prog == "vmscope":
        text = run([vmscope, sub, "--help"])[1]
    else:
        text = run([prog, "--help"])[1]
    help_cache[key] = text
    return text


def options(words):
    for w in words:
        if w.startswith("--"):
            yield w.split("=", 1)[0]
        elif re.fullmatch(r"-[A-Za-z?]", w):
            yield w


def named(opt, text):
    return re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", text) is not None


def installed(prog):
    if prog == "xentrace":
        return xentrace_path() is not None
    if prog == "vmscope":
        return os.access(vmscope, os.X_OK)
    return shutil.which(prog) is not None


cmds = commands(doc)
ok("docs/recording.md has sh blocks with trace-cmd, lttng and xentrace commands",
   all(any(c.startswith(p + " ") for c in cmds) for p in ("trace-cmd", "lttng", "xentrace")),
   "commands: %r" % cmds)

clocks = None
if shutil.which("trace-cmd"):
    st, out = run(["trace-cmd", "list", "-C"])
    clocks = out.replace("[", " ").replace("]", " ").split() if st == 0 else None
events = None
try:
    events = set(l.split(":")[0] for l in open("/sys/kernel/tracing/available_events"))
except OSError:
    pass

for c in cmds:
    words = shlex.split(c)
    prog = words[0]
    sub = words[1] if prog in ("trace-cmd", "lttng", "vmscope") and len(words) > 1 else ""
    rest = words[2:] if sub else words[1:]
    name = "`%s`" % c
    if not installed(prog):
        skip(name + ": options in its --help", "%s is not installed" % prog)
        continue
    text = help_text(prog, sub)
    if text is None:
        skip(name + ": options in its --help", "%s %s --help gives no text here (lttng needs man)" % (prog, sub))
    else:
        missing = [o for o in options(rest) if not named(o, text)]
        if prog == "trace-cmd" and sub and ("usage:" not in text or "trace-cmd " + sub not in text):
            missing.append("(no such command: " + sub + ")")
        ok(name + ": options in its --help", not missing, "not in the --help text: %s" % missing)
    if prog == "trace-cmd":
        seen = set()
        for i, w in enumerate(rest[:-1]):
            v = rest[i + 1]
            if w == "-C":
                if clocks is None:
                    skip("%s: clock %s" % (name, v), "trace-cmd list -C failed")
                else:
                    ok("%s: clock %s is offered (trace-cmd list -C: %s)" % (name, v, " ".join(clocks)),
                       v == "tsc2nsec" and "x86-tsc" in clocks or v in clocks)
            if w == "-e" and v not in seen:
                seen.add(v)
                system = v.split(":")[0]
                if system == "kvm":
                    print("# %s: -e kvm not checked: no kvm module on this machine" % name)
                elif events is None:
                    skip("%s: event system %s" % (name, v), "tracefs not readable")
                else:
                    ok("%s: event system %s is in available_events" % (name, v), system in events)

# the check can fail: an option no --help names is found
if installed("trace-cmd"):
    ok("an option trace-cmd record does not have is found missing",
       not named("--frobnicate", help_text("trace-cmd", "record")) and named("-A", help_text("trace-cmd", "record")))

# the lttng commands, for real, against a private session daemon
lttng = [shlex.split(c) for c in cmds if c.startswith("lttng ")]
if not lttng:
    pass
elif not shutil.which("lttng") or not shutil.which("lttng-sessiond"):
    skip("lttng commands run against a private lttng-sessiond", "lttng-tools is not installed")
elif os.geteuid() == 0 and not shutil.which("setpriv"):
    skip("lttng commands run against a private lttng-sessiond",
         "root, and no setpriv (util-linux) to run it as nobody beside the machine's own")
else:
    home = tempfile.mkdtemp(prefix="vmscope-lttng-")
    os.chmod(home, 0o777)
    drop = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
    env = dict(os.environ, LTTNG_HOME=home, HOME=home)
    base = drop + ["env", "LTTNG_HOME=" + home, "HOME=" + home]
    st, out = run(base + ["lttng-sessiond", "--daemonize"], env=env)
    pidfile = os.path.join(home, ".lttng", "lttng-sessiond.pid")
    for _ in range(50):
        if os.path.exists(pidfile):
            break
        time.sleep(0.1)
    if st != 0 or not os.path.exists(pidfile):
        skip("lttng commands run against a private lttng-sessiond", "lttng-sessiond did not start: " + out.strip()[:200])
    else:
        pid = int(open(pidfile).read().split()[0])
        try:
            for w in lttng:
                # the session's output under the private home, not /tmp
                w = [re.sub(r"^--output=.*", "--output=" + os.path.join(home, "out"), x) for x in w]
                st, out = run(base + w, env=env, sigpipe=False)
                refused = st < 0 or (st in (1, 2) and
                                     re.search(r"Unrecognized|Unknown|specify|Invalid|missing", out))
                ok("`%s` runs: its arguments accepted (exit %d%s)" % (" ".join(w), st,
                   ", kernel tracer not available here" if "ernel" in out and st else ""),
                   not refused, out.strip())
            # the check can fail: an option lttng does not know is refused
            st, out = run(base + ["lttng", "enable-event", "--kernel", "--frobnicate", "x"], env=env)
            ok("an unknown lttng option is refused (exit %d)" % st, st in (1, 2) and "Unrecognized" in out, out)
        finally:
            os.kill(pid, signal.SIGTERM)
            for _ in range(50):
                try:
                    os.kill(pid, 0)
                except OSError:
                    break
                time.sleep(0.1)
            shutil.rmtree(home, ignore_errors=True)

print("1..%d" % n)
