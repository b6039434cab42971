#!/usr/bin/env bash
# Makes sure podman answers for `make image` and the image test, and prints
# its path. It uses TICKETD_PODMAN, or podman on the PATH; only when neither
# exists does it install Debian's podman package with apt-get, saying so on
# stderr (no recommends: the image is built FROM scratch, so neither buildah
# nor the rootless helpers are needed; runc comes along, as crun refuses a
# host whose cgroups are in hybrid mode). make test runs it before the suite;
# where it fails, the image test skips with its reason.
set -euo pipefail

log() { echo "ensure-podman: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -n "${TICKETD_PODMAN:-}" ]; then
  [ -x "$TICKETD_PODMAN" ] || { log "TICKETD_PODMAN=$TICKETD_PODMAN is not an executable"; exit 1; }
  echo "$TICKETD_PODMAN"; exit 0
fi
if path=$(command -v podman); then echo "$path"; exit 0; fi

if ! command -v apt-get >/dev/null 2>&1; then
  log "podman is missing and apt-get is not available: install podman and set TICKETD_PODMAN to its path if it is not on the PATH"
  exit 1
fi
log "podman is missing; installing Debian's podman package with apt-get"
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc >&2
command -v podman
