#!/usr/bin/env bash
# Pipeline stages across hosts (issue 31): three test hosts in network namespaces that this
# script makes (a bridge, a veth pair per host, 10.x.y.2-4), mpirun's launcher pointed at
# `ip netns exec` instead of ssh, ranks talking TCP over the veths only (btl tcp,self). One rank
# per host: 32 greedy tokens and perplexity's every log-probability equal one process's.
# Needs root (namespaces); exits 77 (skipped) without it. Usage: cli_mpi_hosts.sh BIN SOURCE_DIR
set -u
bin="$1"; src="$2"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then echo "SKIP: network namespaces need root and iproute2"; exit 77; fi
tmp="$(mktemp -d)"
tag=$$; br="lsbr$tag"; net="10.$((tag % 200 + 20)).$((tag / 200 % 250))"
cleanup() {
  for i in 2 3 4; do ip netns del "ls$tag-$i" 2>/dev/null; done
  ip link del "$br" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
fails=0; passes=0
fail() { echo "FAIL: $1"; shift; for f in "$@"; do echo "--- $f:"; head -30 "$f"; done; fails=$((fails + 1)); }

ip link add "$br" type bridge && ip addr add "$net.1/24" dev "$br" && ip link set "$br" up || { echo "FAIL: cannot make the bridge"; exit 1; }
hosts=()
for i in 2 3 4; do
  ns="ls$tag-$i"
  ip netns add "$ns" && ip link add "v$tag-$i" type veth peer name eth0 netns "$ns" && ip link set "v$tag-$i" master "$br" up &&
    ip -n "$ns" addr add "$net.$i/24" dev eth0 && ip -n "$ns" link set eth0 up && ip -n "$ns" link set lo up ||
    { echo "FAIL: cannot make test host $ns"; exit 1; }
  hosts+=("$net.$i")
done
# The launch agent: "agent HOST command..." runs the command in HOST's namespace, with the
# session directory of a host of its own (hosts/N under this test's folder): the test hosts
# share one filesystem and one hostname, so the three orted daemons made the same
# ompi.<hostname>.<uid>/jf.<job> directory at once, and one failed ("File exists",
# orte_session_dir failed: a clean-clone CI run failed so). Real hosts each have their /tmp.
cat >"$tmp/agent" <<AGENT
#!/bin/sh
host="\$1"; shift
dir="$tmp/hosts/\${host##*.}"
mkdir -p "\$dir"
cmd=\$(printf '%s ' "\$@" | sed "s|orte_tmpdir_base \\"$tmp\\"|orte_tmpdir_base \\"\$dir\\"|")
export OMPI_MCA_orte_tmpdir_base="\$dir"
exec ip netns exec "ls$tag-\${host##*.}" sh -c "\$cmd"
AGENT
chmod +x "$tmp/agent"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PMIX_MCA_gds=hash
# Open MPI's session directories under this test's own folder: under the shared /tmp, a job of
# another test (CTest runs two at once) or a stale one from an earlier run made orted's mkdir
# fail ("File exists", orte_session_dir failed) and the job with it.
export OMPI_MCA_orte_tmpdir_base="$tmp"
hostlist="$(IFS=,; echo "${hosts[*]}")"
# --mca rtc ^hwloc: the daemons on the test hosts crashed now and then writing the hwloc
# topology to shared memory (hwloc_shmem_topology_write, in that component); runs bind nothing.
mpi() {
  timeout 120 mpirun --mca rtc ^hwloc --mca plm_rsh_agent "$tmp/agent" --mca oob_tcp_if_include "$net.0/24" --mca btl tcp,self \
    --mca btl_tcp_if_include "$net.0/24" -H "$hostlist" -np 3 "$@"
}

m="$src/tests/data/gemma4_tiny.gguf"
prompt="Once upon a time, once upon a time, in a land"
"$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 >"$tmp/run.1" 2>/dev/null
if ! mpi "$bin" run -m "$m" -p "$prompt" -n 32 --temp 0 -c 256 -ub 8 >"$tmp/run.3" 2>"$tmp/run.3.err"; then
  fail "run on three hosts exited non-zero" "$tmp/run.3.err"
elif ! cmp -s "$tmp/run.1" "$tmp/run.3"; then
  fail "run on three hosts printed other tokens than one process" "$tmp/run.1" "$tmp/run.3"
else
  passes=$((passes + 1))
fi
"$bin" perplexity -m "$m" -f "$src/tests/data/GPL-3.txt" -c 64 --chunks 2 -ub 16 --kl-divergence-base "$tmp/ppl.1" >/dev/null 2>&1
if ! mpi "$bin" perplexity -m "$m" -f "$src/tests/data/GPL-3.txt" -c 64 --chunks 2 -ub 16 --kl-divergence-base "$tmp/ppl.3" >"$tmp/ppl.3.out" 2>&1; then
  fail "perplexity on three hosts exited non-zero" "$tmp/ppl.3.out"
elif ! cmp -s "$tmp/ppl.1" "$tmp/ppl.3"; then
  fail "perplexity on three hosts: log-probabilities differ from one process's" "$tmp/ppl.3.out"
else
  passes=$((passes + 1))
fi
# A served completion: rank 0 (the first host) answers HTTP inside its namespace; the reply
# equals a one-process server's. SIGTERM to rank 0 ends the job in order (exit 0).
port=$((20000 + tag % 20000))
body='{"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0}'
"$bin" serve -m "$m" --port "$port" -c 256 >"$tmp/srv.1.log" 2>&1 &
one=$!
mpi "$bin" serve -m "$m" --port "$port" -c 256 >"$tmp/srv.3.log" 2>&1 &
job=$!
ask() {  # ask WHERE: the completion's text from the server in the root namespace or on host 2
  for _ in $(seq 200); do
    # Until it answers with a completion (503 while the model loads).
    out="$($1 curl -s -m 30 "http://127.0.0.1:$port/v1/completions" -d "$body" 2>/dev/null)" &&
      text="$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["choices"][0]["text"])' 2>/dev/null)" &&
      { echo "$text"; return; }
    sleep 0.1
  done
}
want="$(ask "")"
got="$(ask "ip netns exec ls$tag-2")"
kill -TERM "$one" 2>/dev/null; wait "$one"
for p in $(pgrep -f "$bin serve -m $m" || true); do
  grep -qz '^OMPI_COMM_WORLD_RANK=0$' "/proc/$p/environ" 2>/dev/null && kill -TERM "$p"
done
if ! wait "$job"; then
  fail "serve on three hosts did not end in order after SIGTERM to rank 0" "$tmp/srv.3.log"
elif [ -z "$want" ] || [ "$want" != "$got" ]; then
  fail "serve on three hosts answered '$got', one process '$want'" "$tmp/srv.3.log"
else
  passes=$((passes + 1))
fi

echo "mpi hosts: $passes passed, $fails failed (hosts ${hosts[*]})"
[ "$fails" -eq 0 ]
