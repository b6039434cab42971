#!/usr/bin/env python3
"""Where a call's CPU goes: the load generator (mcpload), the server, and PostgreSQL (every postgres process), per
call, for the §24 suites, one suite after another on fresh servers (docs/perf.md, "Where the CPU goes").

  scripts/cpu-split.py SUITE...     suites: noop naive_create naive_replay td_create td_replay td_list
  BIN: a folder with mcpload and noop-mcp (built from $SHARED/bench) and ticketd; SHARED (default ../shared);
  BENCH_PG (default postgres://postgres@127.0.0.1:5432) re-creates the databases exp_td and exp_naive (left for scripts/pgbench/run.sh);
  DUR seconds measured per suite (default 8); LOGSQL=1 logs every statement of exp_td to the server's log.
Only 127.0.0.1; every process it starts is killed at the end."""
import json, os, signal, subprocess, sys, tempfile, time
B = os.environ["BIN"]
BENCH = os.path.join(os.environ.get("SHARED", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared")), "bench")
sys.path.insert(0, BENCH)
import run_ticketd as rt  # noqa: E402
PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432").rstrip("/") + "/{db}?sslmode=disable"
rt.PG = PG
HZ = os.sysconf("SC_CLK_TCK")
def cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read().rsplit(")", 1)[1].split()
    return (int(s[11]) + int(s[12])) / HZ
def pgcpu():
    t = 0.0
    for p in os.listdir("/proc"):
        if not p.isdigit(): continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if not f.read().startswith("postgres"): continue
            t += cpu(p)
        except OSError: pass
    return t
def psql(db, sql):
    subprocess.run(["psql", PG.format(db=db), "-X", "-q", "-c", sql], check=True, capture_output=True)
def start(kind):
    port = 18400 + hash(kind) % 100
    if kind == "noop":
        p = subprocess.Popen([B+"/noop-mcp", "-addr", f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        rt.wait_port(port); return p, None, port
    if kind == "naive":
        psql("postgres", "DROP DATABASE IF EXISTS exp_naive"); psql("postgres", "CREATE DATABASE exp_naive")
        subprocess.run(["psql", PG.format(db="exp_naive"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-f", BENCH+"/schema.sql"], check=True, capture_output=True)
        p = subprocess.Popen([B+"/noop-mcp", "-addr", f"127.0.0.1:{port}", "-lookup-first", "-db", PG.format(db="exp_naive"), "-jwt-secret", rt.NAIVE_SECRET], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        rt.wait_port(port)
        tok = subprocess.run([B+"/noop-mcp", "-print-token", "-jwt-secret", rt.NAIVE_SECRET, "-token-tenant", "demo"], capture_output=True, text=True, check=True).stdout.strip()
        return p, tok, port
    psql("postgres", "DROP DATABASE IF EXISTS exp_td"); psql("postgres", "CREATE DATABASE exp_td")
    if os.environ.get("LOGSQL"): psql("postgres", "ALTER DATABASE exp_td SET log_statement = 'all'")
    d = tempfile.mkdtemp()
    p, tok, _ = rt.start_ticketd(os.environ.get("TD", B+"/ticketd"), "td", port, d, PG.format(db="exp_td"))
    return p, tok, port
SU = {"noop": ("noop", "noop", rt.NOOP, []),
      "naive_create": ("naive", "create_ticket", rt.NAIVE, []),
      "naive_replay": ("naive", "create_ticket", rt.NAIVE_REPLAY, ["-pool", "2000", "-pool-seed", "7", "-prefill"]),
      "td_create": ("td", "create_ticket", rt.CREATE, []),
      "td_replay": ("td", "create_ticket", rt.REPLAY, ["-pool", "2000", "-pool-seed", "7", "-prefill"]),
      "td_list": ("td", "list_tickets", rt.LIST, [])}
servers = {}
dur = int(os.environ.get("DUR", "8"))
try:
    for s in sys.argv[1:]:
        kind, tool, args, extra = SU[s]
        if kind not in servers: servers[kind] = start(kind)
        p, tok, port = servers[kind]
        if kind != "noop": psql("exp_td" if kind == "td" else "exp_naive", "ANALYZE")
        cmd = [B+"/mcpload", "-url", f"http://127.0.0.1:{port}/mcp", "-tool", tool, "-args", args, "-c", "16", "-d", f"{dur}s", "-warmup", "2s", "-json"] + extra
        if tok: cmd += ["-bearer", tok]
        lp = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2 + (6 if "-prefill" in extra else 0) + 0.05)
        s0, g0, t0 = cpu(p.pid), pgcpu(), time.monotonic()
        with open("/proc/stat") as f: m0 = f.readline().split()[1:]
        time.sleep(dur - 0.2)
        s1, g1, t1 = cpu(p.pid), pgcpu(), time.monotonic()
        with open("/proc/stat") as f: m1 = f.readline().split()[1:]
        out, err = lp.communicate()
        j = json.loads([l for l in out.splitlines() if l.startswith("{")][-1])
        n = j["rps"] * (t1 - t0)
        busy = lambda m: sum(int(x) for i, x in enumerate(m) if i not in (3, 4)) / HZ
        print(f"{s:14s} rps={j['rps']:7.0f} p50={j['p50_ms']:5.1f} err={j['errors']+j['tool_errors']} "
              f"server={1e6*(s1-s0)/n:6.0f} pg={1e6*(g1-g0)/n:6.0f} client={j['client_cpu_us_per_op']:6.0f} machine={1e6*(busy(m1)-busy(m0))/n:6.0f} us/op", flush=True)
finally:
    for p, _, _ in servers.values():
        os.killpg(p.pid, signal.SIGKILL)
