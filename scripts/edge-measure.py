#!/usr/bin/env python3
# edge-measure's loopback helpers, each bounded by MAXSECS:
#   hang PORT STATUS MAXSECS     accept connections, read what comes, never
#                                answer; STATUS holds "open accepted"
#   receive PORT LOG MAXSECS     answer every POST 204 at once; LOG gets a
#                                line "receipt_epoch key created_at" per call
#   latency LOG KEYS DEADLINE    each ticket in KEYS ("key created_at" a
#                                line): its first receipt minus its
#                                created_at; one not received counts as
#                                DEADLINE (epoch seconds) minus created_at
import json, math, os, re, selectors, socket, sys, threading, time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

def hang(port, status, maxsecs):
    sel = selectors.DefaultSelector()
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port)); srv.listen(512); srv.setblocking(False)
    sel.register(srv, selectors.EVENT_READ)
    open_, accepted, end = 0, 0, time.time() + maxsecs
    def write():
        with open(status + ".tmp", "w") as f: f.write(f"{open_} {accepted}\n")
        os.replace(status + ".tmp", status)
    write()
    while time.time() < end:
        for key, _ in sel.select(0.5):
            if key.fileobj is srv:
                c, _ = srv.accept(); c.setblocking(False)
                sel.register(c, selectors.EVENT_READ); open_ += 1; accepted += 1
            else:
                try: data = key.fileobj.recv(65536)
                except OSError: data = b""
                if not data:
                    sel.unregister(key.fileobj); key.fileobj.close(); open_ -= 1
        write()

def receive(port, log, maxsecs):
    lock, out = threading.Lock(), open(log, "a", buffering=1)
    class H(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            now = time.time()
            t = json.loads(body).get("data", {}).get("ticket", {})
            with lock: out.write(f"{now:.6f} {t.get('key', '-')} {t.get('created_at', '-')}\n")
            self.send_response(204); self.end_headers()
        def log_message(self, *a): pass
    srv = ThreadingHTTPServer(("127.0.0.1", port), H); srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    time.sleep(maxsecs)

def epoch(ts):  # RFC 3339 with up to nanoseconds, as Go writes it
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", ts)
    frac = float(m.group(2) or 0)
    tz = "+00:00" if m.group(3) == "Z" else m.group(3)
    return datetime.fromisoformat(m.group(1) + tz).timestamp() + frac

def latency(log, keys, deadline):
    got = {}
    for line in open(log):
        r, k, _ = line.split()
        got.setdefault(k, float(r))
    lat, missing = [], 0
    for line in open(keys):
        k, c = line.split()
        if k not in got:
            missing += 1  # counted as waiting until the deadline: a lower bound
        lat.append(got.get(k, deadline) - epoch(c))
    lat.sort()
    def q(p):  # nearest rank
        return round(1000 * lat[max(0, math.ceil(len(lat) * p) - 1)], 1) if lat else 0
    print(json.dumps({"n": len(lat), "missing": missing, "p50_ms": q(0.5), "p90_ms": q(0.9), "p99_ms": q(0.99)}))

mode = sys.argv[1]
if mode == "hang": hang(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
elif mode == "receive": receive(int(sys.argv[2]), sys.argv[3], float(sys.argv[4]))
elif mode == "latency": latency(sys.argv[2], sys.argv[3], float(sys.argv[4]))
