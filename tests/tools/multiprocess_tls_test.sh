#!/usr/bin/env bash
# TLS between the nodes of a job on loopback ([security] ca, certificate, key): the same
# losses as with the token alone while outsiders with other certificates knock at every
# port; a node with a certificate of another CA, or a peer posing as another node, is
# refused with one line naming the peer; files that cannot serve stop a node at start
# (exit 2, naming the file). Certificates are made here with the openssl command line.
#   multiprocess_tls_test.sh PATH/TO/deepcee CONFIGS_DIR
set -u
deepcee=$1
configs=$(cd "$2" && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
source "$(dirname "$0")/test_lib.sh"
(umask 077 && openssl rand -hex 32 >"$work/token")
export DEEPCEE_TOKEN_FILE=$work/token

# The job's CA and a certificate per node; another CA with a certificate for n1.
pki=$work/pki
{
  make_cas "$pki" &&
    node_cert "$pki" n0 n0 ca 2 && node_cert "$pki" n1 n1 ca 2 && node_cert "$pki" n2 n2 ca 2 &&
    node_cert "$pki" other-n1 n1 other 2 &&
    node_cert "$pki" old-n1 n1 ca 0 # expires the second it is made
} >"$work/pki.log" 2>&1 || { echo "FAIL: openssl: $(cat "$work/pki.log")"; exit 1; }

read -r p0 p1 p2 < <(python3 "$(dirname "$0")/free_ports.py" 3)

write_corpus "$work/data"

# write_job FILE STEPS CONNECT_TIMEOUT SECURITY N0 N1 N2: N0..N2 name each node's
# certificate file (pki/N.pem and pki/N.key, relative to the job file) in its [[node]]
# table, or "" for none.
write_job() {
  local own=()
  for c in "$5" "$6" "$7"; do
    own+=("$([[ -n $c ]] && printf 'certificate = "pki/%s.pem"\nkey = "pki/%s.key"' "$c" "$c")")
  done
  cat >"$1" <<TOML
name = "tls-test"
time = "virtual"
cluster = "$configs/local-cluster/cluster.toml"
plan = "$configs/local-cluster/plan.json"
coordinator = "n0"
connect_timeout = $3
$4
[[node]]
name = "n0"
host = "127.0.0.1"
port = $p0
${own[0]}
[[node]]
name = "n1"
host = "127.0.0.1"
port = $p1
${own[1]}
[[node]]
name = "n2"
host = "127.0.0.1"
port = $p2
${own[2]}
[train]
seed = 7
steps = $2
batch = 12
out = "$work/runs"
[train.model]
n_layer = 2
d_model = 32
n_head = 2
context = 16
[train.data]
path = "$work/data"
TOML
}
ca='[security]
ca = "pki/ca.pem"'

start() {
  timeout 60 "$deepcee" node "$2" --name "$1" --out "$work/out-$(basename "$3" .log)" "${@:4}" >"$3" 2>&1 &
  pids+=($!)
  eval "pid_$1=$!"
}
finish() {
  local p
  eval "p=\$pid_$1"
  wait "$p"
  rc=$?
}
expect_line() {
  local got
  got=$(grep '^deepcee node' "$1")
  [[ $(printf '%s\n' "$got" | grep -c .) == 1 ]] || fail "$1: expected one failure line, got: $(cat "$1")"
  [[ $got =~ $2 ]] || fail "$1: '$got' does not match '$2'"
}
losses() { grep '^step [0-9]* loss' "$1"; }

# 1. The same job with the token alone and with TLS, outsiders at every port during the TLS
#    run: a client of another CA, one without a certificate, random bytes, and at n0 a token
#    proof relayed from another session. The losses are equal bit for bit; each node names
#    every outsider it refused, and goes on.
steps=1000
write_job "$work/plain.toml" $steps 10 "" "" "" ""
write_job "$work/tls.toml" $steps 10 "$ca" n0 n1 n2
t0=$SECONDS
for n in n1 n2 n0; do start $n "$work/plain.toml" "$work/plain-$n.log" --step-timeout 20; done
for n in n0 n1 n2; do finish $n; [[ $rc == 0 ]] || fail "token only: $n exit $rc: $(tail -3 "$work/plain-$n.log")"; done
plain_s=$((SECONDS - t0))
t0=$SECONDS
for n in n1 n2 n0; do start $n "$work/tls.toml" "$work/tls-$n.log" --step-timeout 20; done
for _ in $(seq 1 200); do grep -q '^step 2 ' "$work/tls-n0.log" 2>/dev/null && break; sleep 0.05; done
for p in $p0 $p1 $p2; do
  timeout 5 openssl s_client -connect 127.0.0.1:$p -cert "$pki/other-n1.pem" -key "$pki/other-n1.key" \
    -CAfile "$pki/ca.pem" </dev/null >/dev/null 2>&1
  timeout 5 openssl s_client -connect 127.0.0.1:$p -CAfile "$pki/ca.pem" </dev/null >/dev/null 2>&1
  python3 -c "import os, socket; s = socket.create_connection(('127.0.0.1', $p)); s.sendall(os.urandom(4096)); s.close()"
done
# The coordinator's inspection endpoint speaks HTTPS with n0's certificate: `deepcee inspect
# --ca` with the job's CA reads it; with another CA, or over plain HTTP, it is one line
# naming the address, exit 1.
iaddr=$(sed -n 's|^inspect: https://||p' "$work/tls-n0.log")
if [[ -z $iaddr ]]; then
  fail "TLS: n0 printed no 'inspect: https://' line: $(grep inspect "$work/tls-n0.log")"
else
  "$deepcee" inspect "https://$iaddr" --once --ca "$pki/ca.pem" >"$work/inspect.txt" 2>&1 &&
    grep -q '^step ' "$work/inspect.txt" || fail "HTTPS: inspect --ca: $(head -3 "$work/inspect.txt")"
  timeout 5 openssl s_client -connect "$iaddr" -CAfile "$pki/ca.pem" -verify_return_error </dev/null \
    >"$work/s_client.txt" 2>&1
  grep -q 'Protocol *: TLSv1.3\|^New, TLSv1.3' "$work/s_client.txt" && grep -q 'subject=CN *= *n0' "$work/s_client.txt" &&
    grep -q 'Verify return code: 0 (ok)' "$work/s_client.txt" || fail "HTTPS: not TLS 1.3 with n0's certificate: $(grep -i 'protocol\|subject\|verify' "$work/s_client.txt")"
  for bad in "https://$iaddr --ca $pki/other.pem" "$iaddr"; do
    # shellcheck disable=SC2086
    out=$("$deepcee" inspect $bad --once 2>"$work/err")
    rc=$?
    [[ $rc == 1 && -z $out && $(wc -l <"$work/err") == 1 ]] && grep -q "$iaddr" "$work/err" ||
      fail "HTTPS: inspect $bad: rc $rc, stderr '$(cat "$work/err")'"
  done
  grep -q 'TLS handshake failed' <("$deepcee" inspect "https://$iaddr" --once --ca "$pki/other.pem" 2>&1) ||
    fail "HTTPS: another CA should fail the TLS handshake"
  "$deepcee" inspect "https://$iaddr" --once 2>"$work/err"
  [[ $? == 2 ]] && grep -q -- '--ca' "$work/err" || fail "HTTPS: an https:// address without --ca: $(cat "$work/err")"
fi
# One process on the same job file (`deepcee run`) serves HTTPS with the coordinator's
# certificate too.
"$deepcee" run "$work/tls.toml" --steps 100000 --inspect 127.0.0.1:0 --out "$work/run-tls" \
  >"$work/run-tls.log" 2>&1 &
run_pid=$!
pids+=($run_pid)
raddr=""
for _ in $(seq 1 300); do
  raddr=$(sed -n 's|^inspect: https://||p' "$work/run-tls.log")
  [[ -n $raddr ]] && break
  sleep 0.1
done
if [[ -z $raddr ]]; then
  fail "deepcee run with certificates printed no 'inspect: https://' line: $(tail -3 "$work/run-tls.log")"
else
  "$deepcee" inspect "https://$raddr" --once --ca "$pki/ca.pem" >"$work/run-inspect.txt" 2>&1 &&
    grep -q '^step ' "$work/run-inspect.txt" || fail "deepcee run over HTTPS: $(head -3 "$work/run-inspect.txt")"
  "$deepcee" inspect "$raddr" --once >/dev/null 2>&1 && fail "deepcee run with certificates answered plain HTTP"
fi
kill -INT $run_pid 2>/dev/null
wait $run_pid 2>/dev/null
# The relay: one with n1's certificate and key but not the token lures n2's `deepcee inject`
# (its job file names n1 the coordinator) and replays n2's token proof into its own session
# with n0's gate: the proof is bound to the session it was made in, so n0 refuses it.
lure=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed 's/^coordinator = .*/coordinator = "n1"/' "$work/tls.toml" >"$work/lured.toml"
python3 "$(dirname "$0")/relay_token_proof.py" "$pki/n1.pem" "$pki/n1.key" "$pki/ca.pem" "$lure" "$p0" \
  >"$work/relay.out" 2>&1 &
relay=$!
pids+=($relay)
for _ in $(seq 1 100); do grep -q '^listening' "$work/relay.out" 2>/dev/null && break; sleep 0.05; done
timeout 20 "$deepcee" inject "127.0.0.1:$lure" --job "$work/lured.toml" --name n2 --connect-timeout 3 \
  --event 'change = { between = ["cloud", "edge"], bandwidth_scale = 1.0 }' >"$work/relay-victim.log" 2>&1 &
victim=$!
pids+=($victim)
wait $relay
grep -q '^refused$' "$work/relay.out" || fail "relay: n0's gate did not refuse the relayed proof: $(cat "$work/relay.out")"
wait $victim
grep -q "^step $steps " "$work/tls-n0.log" && fail "TLS run: the outsiders came after the end; make the job longer"
for n in n0 n1 n2; do finish $n; [[ $rc == 0 ]] || fail "TLS: $n exit $rc: $(tail -3 "$work/tls-$n.log")"; done
cmp -s <(losses "$work/plain-n0.log") <(losses "$work/tls-n0.log") || fail "TLS: the losses differ from the token-only run"
[[ $(losses "$work/tls-n0.log" | wc -l) == "$steps" ]] || fail "TLS: not all $steps steps ran"
grep -q "^node n0: refused a connection from 127.0.0.1:[0-9]*: it does not hold the job's token$" "$work/tls-n0.log" ||
  fail "relay: n0 should refuse the relayed proof: $(grep refused "$work/tls-n0.log")"
for n in n0 n1 n2; do
  r=$(grep -c "^node $n: refused a connection from 127.0.0.1:[0-9]*: " "$work/tls-$n.log")
  want=$([[ $n == n0 ]] && echo 4 || echo 3)
  [[ $r == "$want" ]] || fail "TLS: $n should refuse the $want outsiders, one line each: $(grep refused "$work/tls-$n.log")"
  grep -q "^node $n: refused a connection from 127.0.0.1:[0-9]*: its certificate does not chain to the job's CA" "$work/tls-$n.log" ||
    fail "TLS: $n should say the outsider's certificate is of another CA: $(grep refused "$work/tls-$n.log")"
done
echo "TLS: $steps steps with the token-only run's losses in $((SECONDS - t0)) s (token only: $plain_s s); 10 outsiders refused, one line each, the relayed token proof among them"
grep -h "refused" "$work"/tls-n0.log | sed 's/^/  /'

# 2. A node with a certificate of another CA (trusting that CA): it cannot verify n0 and
#    says so in one line within seconds; n0 names the address it refused.
write_job "$work/other-ca.toml" 5 3 '[security]
ca = "pki/other.pem"' n0 other-n1 n2
start n0 "$work/tls.toml" "$work/otherca-n0.log"
for _ in $(seq 1 100); do grep -q 'coordinator at' "$work/otherca-n0.log" 2>/dev/null && break; sleep 0.05; done
t0=$SECONDS
start n1 "$work/other-ca.toml" "$work/otherca-n1.log"
finish n1; [[ $rc == 1 ]] || fail "another CA: n1 exit $rc"
(( SECONDS - t0 <= 5 )) || fail "another CA: took $((SECONDS - t0)) s"
expect_line "$work/otherca-n1.log" "node n1: cannot authenticate node n0 at 127.0.0.1:$p0: its certificate does not chain to the job's CA \(.*\)$"
echo "another CA: n1 ended within $((SECONDS - t0)) s: $(grep '^deepcee node' "$work/otherca-n1.log")"
finish n0
grep -q "^node n0: refused a connection from 127.0.0.1:[0-9]*: the TLS handshake failed" "$work/otherca-n0.log" ||
  fail "another CA: n0 should name the peer it refused: $(cat "$work/otherca-n0.log")"

# 3. A peer posing as n0 with n1's certificate (an openssl server at n0's port): n1 refuses
#    it by name within seconds.
openssl s_server -accept "$p0" -cert "$pki/n1.pem" -key "$pki/n1.key" -CAfile "$pki/ca.pem" \
  -Verify 1 -tls1_3 -quiet </dev/null >"$work/posing-server.log" 2>&1 &
pids+=($!)
poser=$!
for _ in $(seq 1 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $p0)).close()" 2>/dev/null && break; sleep 0.1; done
t0=$SECONDS
start n1 "$work/tls.toml" "$work/posing-n1.log"
finish n1; [[ $rc == 1 ]] || fail "posing: n1 exit $rc"
(( SECONDS - t0 <= 5 )) || fail "posing: took $((SECONDS - t0)) s"
expect_line "$work/posing-n1.log" "node n1: cannot authenticate node n0 at 127.0.0.1:$p0: its certificate names n1, not node n0"
kill $poser 2>/dev/null
wait $poser 2>/dev/null
echo "posing as n0: n1 ended within $((SECONDS - t0)) s: $(grep '^deepcee node' "$work/posing-n1.log")"

# 4. Files that cannot serve: exit 2 within seconds, one line naming the file.
# refuse_start NAME JOB PATTERN [OPTIONS...]
refuse_start() {
  local out rc t0=$SECONDS
  out=$(timeout 20 "$deepcee" node "$2" --name "$1" "${@:4}" 2>&1); rc=$?
  [[ $rc == 2 ]] || fail "$3: exit $rc: $out"
  (( SECONDS - t0 <= 5 )) || fail "$3: took $((SECONDS - t0)) s"
  [[ $(printf '%s\n' "$out" | grep -c .) == 1 && $out =~ $3 ]] || fail "'$out' does not match '$3'"
}
write_job "$work/as-n2.toml" 5 3 "$ca" n0 n2 n2
refuse_start n1 "$work/as-n2.toml" "^deepcee node: $work/pki/n2.pem: the certificate names n2, not node n1"
write_job "$work/foreign-cert.toml" 5 3 "$ca" n0 other-n1 n2
refuse_start n1 "$work/foreign-cert.toml" "^deepcee node: $work/pki/other-n1.pem: the certificate does not chain to the CA in $work/pki/ca.pem \(unable to get local issuer certificate\)"
write_job "$work/old.toml" 5 3 "$ca" n0 old-n1 n2
refuse_start n1 "$work/old.toml" "^deepcee node: $work/pki/old-n1.pem: the certificate does not chain to the CA in .*\(certificate has expired\)"
write_job "$work/missing.toml" 5 3 "$ca" n0 missing n2
refuse_start n1 "$work/missing.toml" "^deepcee node: $work/pki/missing.pem: the certificate is missing or not a regular file"
cp "$pki/n1.pem" "$pki/swapped.pem"
cp "$pki/n2.key" "$pki/swapped.key"
write_job "$work/swapped.toml" 5 3 "$ca" n0 swapped n2
refuse_start n1 "$work/swapped.toml" "^deepcee node: $work/pki/swapped.key: the private key does not belong to the certificate"
cp "$pki/n1.pem" "$pki/shared.pem"
cp "$pki/n1.key" "$pki/shared.key"
chmod 640 "$pki/shared.key"
write_job "$work/shared.toml" 5 3 "$ca" n0 shared n2
refuse_start n1 "$work/shared.toml" "^deepcee node: $work/pki/shared.key: the private key may be read by group or others \(mode 0640\); a secret must be private, as ssh wants its keys: chmod 600 $work/pki/shared.key$"
write_job "$work/no-ca.toml" 5 3 "" n0 n1 n2
refuse_start n1 "$work/no-ca.toml" "^deepcee node: $work/no-ca.toml:[0-9]+: \[\[node\]\] 'n0' has a certificate but \[security\] has no ca"
refuse_start n1 "$work/tls.toml" "^deepcee node: $work/tls.toml: node n1: --insecure turns the gate off" --insecure
echo "files that cannot serve: exit 2 naming the file, for 8 cases"

! grep -rqF "$(cat "$work/token")" "$work"/*.log 2>/dev/null || fail "the token appears in a log"

if ((failures)); then
  echo "$failures failure(s); logs:"
  for f in "$work"/*.log; do echo "== $f"; cat "$f"; done
  exit 1
fi
echo "multiprocess TLS: all checks passed"
