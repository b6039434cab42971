#!/usr/bin/env python3
"""Where a call's CPU goes: the load generator (mcpload), the server, and PostgreSQL (every postgres process), per
call, for the §24 suites, one after another on the servers ../shared/bench/run.sh starts (docs/perf.md, "Where the
CPU goes"). Unlike run.sh it reads PostgreSQL's and the load generator's share, and it does not rank: one round.

  BIN=DIR scripts/cpu-split.py SUITE...   suites: run_ticketd.py's (noop_go naive_create_pg naive_replay_pg
                                          td_create_pg td_replay_pg td_list_pg), and noop_json: the floor
                                          answering with one JSON body (-json-response), as ticketd does
  BIN: mcpload and noop-mcp built from $SHARED/bench, and ticketd; SHARED (default ../shared); BENCH_PG as run.sh's
  (its databases bench_td and bench_naive are left for scripts/pgbench/run.sh); DUR seconds per suite (default 8);
  LOGSQL=1: PostgreSQL logs every statement of these connections (the log run.sh's statements were taken from).
Only 127.0.0.1; every process it starts is killed at the end."""
import argparse, json, os, signal, subprocess, sys, tempfile, time
here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.environ.get("SHARED", os.path.join(here, "..", "..", "shared")), "bench"))
os.environ.setdefault("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
import run_ticketd as rt  # noqa: E402
from run_bench import Sampler  # noqa: E402
if os.environ.get("LOGSQL"):
    rt.PG += "&options=-c%20log_statement%3Dall"


def pg_ticks():
    """CPU ticks of every postgres process alive now, plus, through the postmaster's children times, those of the
    backends it has reaped."""
    procs = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                comm, rest = f.read().split(" (", 1)[1].rsplit(") ", 1)
        except OSError:
            continue
        if comm.startswith("postgres"):
            procs[pid] = rest.split()
    t = 0
    for s in procs.values():
        t += int(s[11]) + int(s[12])
        if s[1] not in procs:  # the postmaster: its parent is not postgres
            t += int(s[13]) + int(s[14])
    return t


# run.sh's floor answers every call with an SSE stream, go-sdk's default; ticketd answers with one JSON body
# (JSONResponse). noop_json is the same floor with that one setting, to show what it is worth.
rt.SUITES["noop_json"] = ("noop_json", "noop", rt.NOOP, [])
rt.PORTS["noop_json"] = 18288


def start(name, a, datadir):
    if name != "noop_json":
        return rt.start(name, a, datadir)
    p = subprocess.Popen([os.path.join(a.bindir, "noop-mcp"), "-addr", f"127.0.0.1:{rt.PORTS[name]}", "-json-response",
                          "-max-lifetime", "900s"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    rt.wait_port(rt.PORTS[name])
    return p, None, None


a = argparse.Namespace(bindir=os.environ["BIN"], ticketd=os.path.join(os.environ["BIN"], "ticketd"))
dur, servers = int(os.environ.get("DUR", "8")), {}
try:
    for suite in sys.argv[1:]:
        srv, tool, args, extra = rt.SUITES[suite]
        if srv not in servers:
            servers[srv] = start(srv, a, tempfile.mkdtemp(prefix="cpu-split-"))
        p, tok, _ = servers[srv]
        if srv in rt.SERVER_DB:
            rt.psql(rt.SERVER_DB[srv], "ANALYZE")
        cmd = [os.path.join(a.bindir, "mcpload"), "-url", f"http://127.0.0.1:{rt.PORTS[srv]}/mcp", "-tool", tool,
               "-args", args, "-c", "16", "-d", f"{dur}s", "-warmup", "2s", "-json"] + extra + (["-bearer", tok] if tok else [])
        load = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(2 + (6 if "-prefill" in extra else 0) + 0.05)
        sampler, g0 = Sampler(p.pid), pg_ticks()
        sampler.start()
        out = load.communicate()[0]  # sampled until the load ends, as run.sh samples
        g1 = pg_ticks()
        j = json.loads([ln for ln in out.splitlines() if ln.startswith("{")][-1])
        m = sampler.stop(j["rps"])
        calls = j["rps"] * (time.monotonic() - sampler.t0)
        print(f"{suite:16s} rps={j['rps']:7.0f} p50={j['p50_ms']:5.1f} err={j['errors'] + j['tool_errors']} "
              f"client={j['client_cpu_us_per_op']:6.0f} server={m['server_cpu_us_op']:6.0f} "
              f"pg={1e6 * (g1 - g0) / os.sysconf('SC_CLK_TCK') / calls:6.0f} machine={m['machine_cpu_us_op']:6.0f} us/call",
              flush=True)
finally:
    for p, _, _ in servers.values():
        os.killpg(p.pid, signal.SIGKILL)
