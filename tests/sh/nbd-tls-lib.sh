# nbd-tls-lib.sh — sourced by the nbd-tls-*.sh tests: a throw-away X.509
# setup made with openssl, in the directory layout nbdkit, qemu and libnbd
# share (ca-cert.pem with server-cert.pem/server-key.pem for a server,
# with client-cert.pem/client-key.pem for a client).  ECDSA P-256 keys:
# quick to make.
#
#   pki_ca DIR CN                 a CA: DIR/ca-cert.pem, DIR/ca-key.pem
#   pki_server CA_DIR DIR         DIR: the CA's certificate plus a server
#                                 certificate for localhost
#   pki_client CA_DIR DIR CN [TRUST_DIR]
#                                 DIR: a client directory, its certificate
#                                 issued by CA_DIR; its ca-cert.pem, the CA
#                                 it checks the server against, is
#                                 TRUST_DIR's (default CA_DIR's)
#   pki_revoke CA_DIR CERT        add CERT to CA_DIR/ca-crl.pem
#   tls_expect_refused WHAT PATTERN ARGS...  (below)

pki_key() { # FILE
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

pki_ca() { # DIR CN
    mkdir -p "$1"
    pki_key "$1/ca-key.pem"
    openssl req -x509 -new -key "$1/ca-key.pem" -out "$1/ca-cert.pem" -subj "/CN=$2" \
        -days 2 2>/dev/null || fail "openssl could not make the CA $2"
}

# pki_sign CA_DIR KEY CERT CN EXTENSIONS
pki_sign() {
    local ext
    ext=$(mktemp "$tmp/ext.XXXXXX")
    printf '%b\n' "$5" > "$ext"
    openssl req -new -key "$2" -subj "/CN=$4" -out "$3.csr" 2>/dev/null &&
        openssl x509 -req -in "$3.csr" -CA "$1/ca-cert.pem" -CAkey "$1/ca-key.pem" \
            -CAcreateserial -out "$3" -days 2 -extfile "$ext" 2>/dev/null ||
        fail "openssl could not sign a certificate for $4"
    rm -f "$3.csr" "$ext"
}

pki_server() { # CA_DIR DIR
    mkdir -p "$2"
    cp "$1/ca-cert.pem" "$2/"
    pki_key "$2/server-key.pem"
    pki_sign "$1" "$2/server-key.pem" "$2/server-cert.pem" localhost \
        'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth'
}

pki_client() { # CA_DIR DIR CN [TRUST_DIR]
    mkdir -p "$2"
    cp "${4:-$1}/ca-cert.pem" "$2/"
    pki_key "$2/client-key.pem"
    pki_sign "$1" "$2/client-key.pem" "$2/client-cert.pem" "$3" \
        'extendedKeyUsage=clientAuth'
}

pki_revoke() { # CA_DIR CERT
    local d=$1
    [ -e "$d/index.txt" ] || { : > "$d/index.txt"; echo 01 > "$d/crlnumber"; }
    cat > "$d/ca.cnf" <<EOF
[ca]
default_ca = this
[this]
database = $d/index.txt
crlnumber = $d/crlnumber
default_md = sha256
default_crl_days = 2
EOF
    openssl ca -config "$d/ca.cnf" -keyfile "$d/ca-key.pem" -cert "$d/ca-cert.pem" \
        -revoke "$2" 2>/dev/null &&
        openssl ca -config "$d/ca.cnf" -keyfile "$d/ca-key.pem" -cert "$d/ca-cert.pem" \
            -gencrl -out "$d/ca-crl.pem" 2>/dev/null ||
        fail "openssl could not revoke $2"
}

# tls_expect_refused WHAT PATTERN ARGS... — `uraid serve ARGS IMG` must
# fail before it listens, saying PATTERN ($img: the image to serve).
tls_expect_refused() {
    local what=$1 pat=$2 rc=0 out
    shift 2
    out=$(timeout 20 "$URAID" serve -f --socket "$tmp/bad.sock" "$@" "$img" 2>&1) || rc=$?
    [ "$rc" != 0 ] || fail "$what: accepted"
    grep -q -- "$pat" <<<"$out" || fail "$what: message: $out"
    [ ! -e "$tmp/bad.sock" ] || fail "$what: a socket was left"
}
