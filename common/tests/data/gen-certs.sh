#!/bin/sh
# Regenerates the TLS test fixtures (run once; the outputs are committed).
# EC P-256 keys, validity 100 years (36500 days).
set -eu
cd "$(dirname "$0")"
days=36500
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Test CA and a second, unrelated CA (for "server not trusted" tests).
for ca in test-ca other-ca; do
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
        -days $days -subj "/CN=mkueue $ca" \
        -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
        -keyout $ca-key.pem -out $ca.pem
done

# Server certificate for 127.0.0.1 and localhost, signed by test-ca.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
    -subj "/CN=localhost" -keyout server-key.pem -out "$tmp/server.csr"
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$tmp/server.ext"
openssl x509 -req -in "$tmp/server.csr" -CA test-ca.pem -CAkey test-ca-key.pem -CAcreateserial \
    -CAserial "$tmp/ca.srl" -days $days -sha256 -extfile "$tmp/server.ext" -out server.pem

# Client certificate (CN=test-client, O=system:masters), signed by test-ca.
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -sha256 \
    -subj "/O=system:masters/CN=test-client" -keyout client-key.pem -out "$tmp/client.csr"
printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' > "$tmp/client.ext"
openssl x509 -req -in "$tmp/client.csr" -CA test-ca.pem -CAkey test-ca-key.pem \
    -CAserial "$tmp/ca.srl" -CAcreateserial -days $days -sha256 -extfile "$tmp/client.ext" -out client.pem
