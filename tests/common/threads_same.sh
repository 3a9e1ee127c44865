# Sourced by the worker pool's shell tests (tests/tracedat/test_threads_same.sh,
# tests/xen/test_xen_threads_same.sh): TAP lines, and `same`, which compares a command's
# output and messages at --threads 2, 4 and the default with those of --threads 1.
# Needs VMS (the vmscope binary) and TMP (a directory of the test's own).
n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; [ -n "${2:-}" ] && echo "# $2"; }
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# out DIR T CMD ARGS...: the command's output at threads T ("" = the default) into DIR/T.CMD
out() {
  local d=$1 t=$2 cmd=$3; shift 3
  local topt=(); [ -n "$t" ] && topt=(--threads "$t")
  local f=$d/t${t:-default}.$cmd
  case $cmd in
    report) "$VMS" report --json "${topt[@]}" "$@" > "$f" 2>"$f.err" ;;
    vcpus|exits) "$VMS" $cmd --csv "${topt[@]}" "$@" > "$f" 2>"$f.err" ;;
    export) # one output name for all: export's last line names it
      "$VMS" export "${topt[@]}" -o "$d/x.pftrace" "$@" 2>"$f.err" && mv "$d/x.pftrace" "$f" ;;
  esac
}

same() {   # NAME TRACE...
  local name=$1; shift
  local d=$TMP/$name
  mkdir -p "$d"
  for cmd in ${CMDS:-report vcpus exits export}; do
    if ! out "$d" 1 $cmd "$@"; then notok "$name: $cmd --threads 1" "$(tail -1 "$d/t1.$cmd.err")"; continue; fi
    if [ ! -s "$d/t1.$cmd" ]; then notok "$name: $cmd --threads 1 wrote nothing"; continue; fi
    local bad=""
    for t in "" 2 4; do
      out "$d" "$t" $cmd "$@" || { bad="$bad ${t:-default}:failed"; continue; }
      cmp -s "$d/t1.$cmd" "$d/t${t:-default}.$cmd" || bad="$bad ${t:-default}:differs"
      cmp -s "$d/t1.$cmd.err" "$d/t${t:-default}.$cmd.err" || bad="$bad ${t:-default}:stderr"
    done
    if [ -z "$bad" ]; then ok "$name: $cmd at --threads 2, 4, default = --threads 1 ($(stat -c %s "$d/t1.$cmd") bytes)"
    else notok "$name: $cmd at --threads 2, 4, default = --threads 1" "$bad"; fi
  done
}

