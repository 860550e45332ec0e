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

# The TLS tests' certificates, made with the openssl command line (EC P-256 keys).
# make_cas DIR: two certificate authorities in DIR, the job's (ca.pem, ca.key) and another
# (other.pem, other.key).
pki_key="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
make_cas() {
  mkdir -p "$1" || return 1
  local ca
  for ca in ca other; do
    openssl req -x509 $pki_key -keyout "$1/$ca.key" -out "$1/$ca.pem" -days 2 \
      -subj "/CN=deepcee test $ca" || return 1
  done
}
# node_cert DIR FILE NAME CA DAYS: DIR/FILE.pem and DIR/FILE.key, a certificate naming node
# NAME, signed by DIR/CA.pem, valid for DAYS days (0: it expires the second it is made).
node_cert() {
  openssl req $pki_key -keyout "$1/$2.key" -out "$1/$2.csr" -subj "/CN=$3" \
    -addext "subjectAltName=DNS:$3" -addext "extendedKeyUsage=serverAuth,clientAuth" &&
    openssl x509 -req -in "$1/$2.csr" -CA "$1/$4.pem" -CAkey "$1/$4.key" -CAcreateserial \
      -out "$1/$2.pem" -days "$5" -copy_extensions copy
}
