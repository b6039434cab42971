#!/usr/bin/env bash
# Builds ticketd's OCI image with podman, FROM scratch: no base image is
# pulled, so it builds on a machine that reaches no container registry.
#
#   scripts/image.sh IMAGE VERSION      (make image IMAGE=… VERSION=…)
#
# The binary is built here, static (CGO_ENABLED=0, the SQLite driver is pure
# Go), with -trimpath and the version stamped as `make build` stamps it; the
# CA bundle is this machine's (Debian's ca-certificates). The image runs as
# UID/GID 65532 (named ticketd in its /etc/passwd), with /data writable and
# its working directory, ticketd as entrypoint and `serve` as command.
# deploy/image/Containerfile is the recipe; podman is installed with apt-get
# when missing (scripts/ensure-podman.sh says so). Prints the image's ID.
set -euo pipefail
cd "$(dirname "$0")/.."

image="${1:?usage: scripts/image.sh IMAGE VERSION}"
version="${2-}"
go="${GO:-go}"
ca=/etc/ssl/certs/ca-certificates.crt
log() { echo "image: $*" >&2; }

podman=$(./scripts/ensure-podman.sh)
[ -s "$ca" ] || { log "$ca is missing: install Debian's ca-certificates package"; exit 1; }

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
root="$ctx/rootfs"
mkdir -p "$root/usr/local/bin" "$root/etc/ssl/certs" "$root/tmp" "$ctx/data"
chmod 1777 "$root/tmp"

log "building the static binary (version: ${version:-none, the VCS stamp stands})"
CGO_ENABLED=0 "$go" build -trimpath \
  -ldflags "-s -w -X github.com/ticketd/ticketd/internal/buildinfo.version=$version" \
  -o "$root/usr/local/bin/ticketd" ./cmd/ticketd
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'ticketd:x:65532:65532:ticketd:/data:/sbin/nologin\n' >"$root/etc/passwd"
printf 'ticketd:x:65532:\n' >"$root/etc/group"

log "building $image with $podman"
"$podman" build --quiet --pull=never --file deploy/image/Containerfile --tag "$image" \
  --label "org.opencontainers.image.title=ticketd" \
  --label "org.opencontainers.image.version=$version" \
  --label "org.opencontainers.image.source=https://github.com/ticketd/ticketd" \
  "$ctx"
