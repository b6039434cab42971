#!/usr/bin/env bash
# Makes sure a Chromium answers for the console's browser test and prints its
# path. It uses TICKETD_CHROMIUM, or chromium / chromium-browser on the PATH;
# only when none exists does it install Debian's chromium package with apt-get,
# saying so on stderr. make test runs it first, so a missing browser is found
# in its first seconds rather than minutes into the suite.
set -euo pipefail

log() { echo "ensure-chromium: $*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ -n "${TICKETD_CHROMIUM:-}" ]; then
  [ -x "$TICKETD_CHROMIUM" ] || { log "TICKETD_CHROMIUM=$TICKETD_CHROMIUM is not an executable"; exit 1; }
  echo "$TICKETD_CHROMIUM"; exit 0
fi
for name in chromium chromium-browser; do
  if path=$(command -v "$name"); then echo "$path"; exit 0; fi
done

if ! command -v apt-get >/dev/null 2>&1; then
  log "Chromium is missing and apt-get is not available: install Chromium (or Chrome) and set TICKETD_CHROMIUM to its path"
  exit 1
fi
log "Chromium is missing; installing Debian's chromium package with apt-get"
as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
command -v chromium
