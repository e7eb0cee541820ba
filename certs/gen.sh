#!/usr/bin/env bash
# Development and test certificates with OpenSSL.
#
#   certs/gen.sh ca      DIR NAME CN                 -> DIR/NAME.crt, DIR/NAME.key
#   certs/gen.sh serving DIR NAME CA CN SAN[,SAN...] -> server cert signed by DIR/CA
#   certs/gen.sh client  DIR NAME CA CN [ORG]        -> client cert signed by DIR/CA
#   certs/gen.sh sa      DIR NAME                    -> RSA key pair for service-account tokens
#   certs/gen.sh webhook DIR [SERVICE] [NAMESPACE]   -> DIR/ca.{crt,key}, DIR/tls.{crt,key}
#        with SANs SERVICE, SERVICE.NAMESPACE, SERVICE.NAMESPACE.svc, localhost, 127.0.0.1
#
# SANs are DNS names or IP addresses (IPv4/IPv6), detected by shape.
# Existing files are kept, so the command is idempotent; DAYS (default 365)
# sets the validity of new certificates.
set -euo pipefail

DAYS=${DAYS:-365}
die() { echo "certs/gen.sh: $*" >&2; exit 1; }
exists() { [ -s "$1.crt" ] && [ -s "$1.key" ]; }

san_list() {
    local out="" s
    IFS=, read -ra parts <<<"$1"
    for s in "${parts[@]}"; do
        [ -n "$s" ] || continue
        if [[ $s =~ ^[0-9.]+$ || $s == *:* ]]; then out+="IP:$s,"; else out+="DNS:$s,"; fi
    done
    echo "${out%,}"
}

ca() { # dir name cn
    local base="$1/$2"
    exists "$base" && return 0
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days "$DAYS" \
        -keyout "$base.key" -out "$base.crt" -subj "/CN=$3" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

signed() { # dir name ca subject usage [sans]
    local base="$1/$2" ca="$1/$3" ext
    exists "$base" && return 0
    [ -s "$ca.crt" ] || die "CA $ca.crt not found"
    ext=$(mktemp)
    {
        echo "basicConstraints=critical,CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$5"
        [ -z "${6:-}" ] || echo "subjectAltName=$(san_list "$6")"
    } >"$ext"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout "$base.key" -out "$base.csr" -subj "$4" 2>/dev/null
    openssl x509 -req -in "$base.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial \
        -days "$DAYS" -extfile "$ext" -out "$base.crt" 2>/dev/null
    rm -f "$base.csr" "$ext"
}

cmd=${1:-}
[ -n "$cmd" ] || die "usage: see the header of this script"
shift
case "$cmd" in
ca) [ $# -eq 3 ] || die "usage: ca DIR NAME CN"; mkdir -p "$1"; ca "$@" ;;
serving)
    [ $# -eq 5 ] || die "usage: serving DIR NAME CA CN SANS"
    mkdir -p "$1"; signed "$1" "$2" "$3" "/CN=$4" serverAuth "$5" ;;
client)
    [ $# -ge 4 ] || die "usage: client DIR NAME CA CN [ORG]"
    subj="/CN=$4"; [ -z "${5:-}" ] || subj="/O=$5$subj"
    mkdir -p "$1"; signed "$1" "$2" "$3" "$subj" clientAuth ;;
sa)
    [ $# -eq 2 ] || die "usage: sa DIR NAME"
    mkdir -p "$1"
    [ -s "$1/$2.key" ] || openssl genrsa -out "$1/$2.key" 2048 2>/dev/null
    openssl rsa -in "$1/$2.key" -pubout -out "$1/$2.pub" 2>/dev/null ;;
webhook)
    [ $# -ge 1 ] || die "usage: webhook DIR [SERVICE] [NAMESPACE]"
    dir=$1 svc=${2:-mkueue-webhook} ns=${3:-mkueue-system}
    mkdir -p "$dir"
    ca "$dir" ca "mkueue-webhook-ca"
    signed "$dir" tls ca "/CN=$svc.$ns.svc" serverAuth \
        "$svc,$svc.$ns,$svc.$ns.svc,$svc.$ns.svc.cluster.local,localhost,127.0.0.1" ;;
*) die "unknown command $cmd" ;;
esac
