#!/bin/sh
# Mints an EdDSA (Ed25519) JWT with openssl, for trying the docker-compose
# deployment without an identity provider. In production your identity
# provider mints tokens; ticketd only ever holds the public key.
#
# Usage: deploy/mint-token.sh TENANT SUBJECT [SCOPES] [TTL_SECONDS]
#   e.g. deploy/mint-token.sh acme alice "tickets:read tickets:write tickets:admin" 3600
# Environment (defaults match docker-compose.yml):
#   JWT_PRIVATE_KEY (deploy/jwt-private.pem), TICKETD_JWT_ISSUER
#   (https://issuer.example.com), TICKETD_JWT_AUDIENCE (http://localhost:8080/mcp)
set -eu
[ $# -ge 2 ] || { echo "usage: $0 TENANT SUBJECT [SCOPES] [TTL_SECONDS]" >&2; exit 2; }
key=${JWT_PRIVATE_KEY:-deploy/jwt-private.pem}
iss=${TICKETD_JWT_ISSUER:-https://issuer.example.com}
aud=${TICKETD_JWT_AUDIENCE:-http://localhost:8080/mcp}
tenant=$1
subject=$2
scope=${3:-tickets:read tickets:write}
ttl=${4:-3600}

b64url() { openssl base64 -A | tr '+/' '-_' | tr -d '='; }

now=$(date +%s)
header=$(printf '{"alg":"EdDSA","typ":"JWT"}' | b64url)
payload=$(printf '{"iss":"%s","aud":"%s","sub":"%s","tenant_id":"%s","scope":"%s","iat":%d,"exp":%d}' \
	"$iss" "$aud" "$subject" "$tenant" "$scope" "$now" "$((now + ttl))" | b64url)
# Ed25519 signs the message itself, not a digest, hence -rawin (OpenSSL 3),
# which needs a file rather than a pipe.
msg=$(mktemp)
trap 'rm -f "$msg"' EXIT
printf '%s.%s' "$header" "$payload" >"$msg"
signature=$(openssl pkeyutl -sign -rawin -inkey "$key" -in "$msg" | b64url)
printf '%s.%s.%s\n' "$header" "$payload" "$signature"
