# Shared by the command-line tests (source it after setting `deepcee`): failures are
# counted, not fatal, so that one run reports every check that failed.
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect_error NAME PATTERN -- ARGS...: `deepcee ARGS` must exit 2 with one line on stderr
# matching PATTERN (bad input: one line naming the file, exit 2).
expect_error() {
  local name=$1 pattern=$2
  shift 3
  local err rc
  err=$("$deepcee" "$@" 2>&1 >/dev/null)
  rc=$?
  [[ $rc == 2 ]] || fail "$name: exit code $rc, expected 2 ($err)"
  [[ $(printf '%s\n' "$err" | wc -l) == 1 ]] || fail "$name: expected one line, got: $err"
  [[ $err =~ $pattern ]] || fail "$name: '$err' does not match '$pattern'"
}

# loopback_nodes PORT0 PORT1 PORT2: the [[node]] tables of a job's nodes n0, n1 and n2 on
# 127.0.0.1 at those ports.
loopback_nodes() {
  local k=0 port
  for port in "$@"; do
    printf '[[node]]\nname = "n%d"\nhost = "127.0.0.1"\nport = %s\n' "$k" "$port"
    k=$((k + 1))
  done
}

# write_corpus DIR: a small text corpus (400 lines) in DIR/a.txt for the tiny test models.
write_corpus() {
  mkdir -p "$1"
  local i
  for i in $(seq 1 400); do
    echo "line $i: pipeline stages send activations to the next node, gradients back"
  done >"$1/a.txt"
}
