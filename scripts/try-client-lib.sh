# Sourced by scripts/try-vscode.sh and scripts/try-cursor.sh: what both trials do around the client they try.
# Needs repo, work, the array pids and a log function; start_ticketd sets port and token.

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitfor() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.2; done; log "timed out waiting for '$2' in $1"; exit 1; }

# start_ticketd builds ticketd and serves it in dev mode on a free port, in its own session (setsid) so that
# killing its process group at the end stops it; its banner is $work/ticketd.out, its log $work/ticketd.err.
start_ticketd() {
  (cd "$repo" && go build -o "$work/ticketd" ./cmd/ticketd)
  port=$(freeport)
  setsid "$work/ticketd" serve --dev --data-dir "$work/data" --addr "127.0.0.1:$port" >"$work/ticketd.out" 2>"$work/ticketd.err" &
  pids+=($!)
  waitfor "$work/ticketd.out" '^REST (curl'
  token=$(grep -m1 '^eyJ' "$work/ticketd.out")
}
