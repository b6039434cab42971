package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// What ticketd serve --dev seeds, and so what the benchmark files into.
const (
	devTenant     = "demo"
	devProjectID  = "support"
	devProjectKey = "SUP"
)

// scenario is one row of the benchmark table: a server and what is called.
type scenario struct {
	name  string // short name for -scenarios
	title string // the table's row label
	noop  bool   // a floor instead of ticketd: the go-sdk one, or with ts the TypeScript SDK's
	ts    bool
	// sqlite runs ticketd on its embedded SQLite instead of PostgreSQL.
	sqlite bool
	tool   string
	args   string
	// retry is the load's retry-ratio for create_ticket: 0 all fresh, 1
	// every call after each worker's first a replay.
	retry float64
	// seed is how many tickets the database holds before the run
	// (PostgreSQL only).
	seed int64
	// projects, when above 1, spreads the creates over that many projects
	// of their own, one per worker round robin (PostgreSQL only).
	projects int
}

// postgres reports whether the scenario's server works on PostgreSQL.
func (sc scenario) postgres() bool { return !sc.noop && !sc.sqlite }

// spreadProjects is how many projects the create-16p scenario spreads its
// creates over: as many as the default workers, so that no two workers
// share a project.
const spreadProjects = 16

// listArgs lists the newest 20 tickets of the benchmark's project.
var listArgs = `{"project_id":"` + devProjectID + `","limit":20}`

// baseScenarios are the table, in the order each round runs them.
func baseScenarios(listSeed int64) []scenario {
	return []scenario{
		{name: "noop", title: "go-sdk no-op tool, stateless (the floor)", noop: true, tool: "noop", args: "{}"},
		{name: "noop-ts", title: "TypeScript SDK no-op tool, stateless (second floor)", noop: true, ts: true, tool: "noop", args: "{}"},
		{name: "create", title: "ticketd `create_ticket`, fresh IDs, one project", tool: toolCreate},
		{name: "create-16p", title: "ticketd `create_ticket`, fresh IDs, spread over 16 projects", tool: toolCreate, projects: spreadProjects},
		{name: "replay", title: "ticketd `create_ticket`, replays", tool: toolCreate, retry: 1},
		{name: "list", title: "ticketd `list_tickets` limit 20", tool: "list_tickets", args: listArgs, seed: listSeed},
		{name: "create-sqlite", title: "ticketd `create_ticket` on SQLite", sqlite: true, tool: toolCreate},
	}
}

// seededScenarios measure create and list over a store of n tickets.
func seededScenarios(n int64) []scenario {
	label := humanCount(n)
	return []scenario{
		{name: "create@" + label, title: "ticketd `create_ticket`, " + label + " stored", tool: toolCreate, seed: n},
		{name: "list@" + label, title: "ticketd `list_tickets` limit 20, " + label + " stored", tool: "list_tickets", args: listArgs, seed: n},
	}
}

func humanCount(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// benchConfig is the bench subcommand's command line.
type benchConfig struct {
	Ticketd, Noop string
	// NoopTS is the TypeScript SDK floor's server.mjs, its node_modules
	// installed; empty leaves that floor out. Node runs it.
	NoopTS, Node string
	Rounds       int
	Warmup       time.Duration
	Duration     time.Duration
	Workers      int
	AdminURL     string
	Scenarios    []string // names to run; empty: all
	ListSeed     int64
	Seeds        []int64
	WorkDir      string
	JSONOut      string
	// ColdStarts is how many timed restarts of ticketd serve on an existing
	// PostgreSQL database to measure; 0 measures none.
	ColdStarts int
}

// benchRun is one measured run of one scenario.
type benchRun struct {
	Scenario string  `json:"scenario"`
	Round    int     `json:"round"`
	CallsPS  float64 `json:"calls_per_sec"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	CPUMS    float64 `json:"cpu_per_call_ms"`
	// DBCPUMS is PostgreSQL's CPU per call (all its processes); Busy the
	// share of the machine's cores that were busy, 0 to 1.
	DBCPUMS  float64 `json:"database_cpu_per_call_ms"`
	GenCPUMS float64 `json:"load_generator_cpu_per_call_ms"`
	DBSeen   bool    `json:"database_seen"` // a postgres process was visible, so DBCPUMS means something
	Busy     float64 `json:"machine_busy"`
	RSSMiB   float64 `json:"peak_rss_mib"`
	Calls    int     `json:"calls"`
	Failures int     `json:"failures"`
	Errors   string  `json:"errors,omitempty"`
}

func parseBenchConfig(args []string, stderr io.Writer) (*benchConfig, error) {
	c := &benchConfig{}
	fs := flag.NewFlagSet("ticketd-load bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Ticketd, "ticketd", "bin/ticketd", "ticketd binary")
	fs.StringVar(&c.Noop, "noop", "bin/ticketd-noop", "ticketd-noop binary (the go-sdk floor)")
	fs.StringVar(&c.NoopTS, "noop-ts", "", "server.mjs of the TypeScript SDK floor (tools/ticketd-noop/ts, after npm ci); empty: that floor is not measured")
	fs.StringVar(&c.Node, "node", "node", "Node.js binary that runs -noop-ts")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds; each runs every scenario once against a fresh server, and the table shows medians")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "warm-up of each run, not measured")
	fs.DurationVar(&c.Duration, "duration", 8*time.Second, "measured window of each run")
	fs.IntVar(&c.Workers, "workers", 16, "concurrent workers, each with its own MCP session")
	fs.StringVar(&c.AdminURL, "pg-admin-url", "postgres://postgres:postgres@127.0.0.1:5432/postgres?sslmode=disable",
		"PostgreSQL URL allowed to create and drop databases; each run gets a fresh one")
	scenarios := fs.String("scenarios", "", "comma-separated scenarios to run (default all): noop, noop-ts (with -noop-ts), create, create-16p, replay, list, create-sqlite, and create@SIZE, list@SIZE for each -seeds size, written 10k, 1M, …")
	fs.Int64Var(&c.ListSeed, "list-seed", 1000, "tickets in the database of the list scenario")
	seeds := fs.String("seeds", "", "comma-separated store sizes (e.g. 10000,1000000) to also measure create and list at")
	fs.StringVar(&c.WorkDir, "work-dir", "", "where the servers' logs and data go, kept afterwards (default a temporary directory, removed)")
	fs.StringVar(&c.JSONOut, "json-out", "", "also write every run's numbers to this file as JSON")
	fs.IntVar(&c.ColdStarts, "cold-starts", 7, "timed starts of ticketd serve (exec to /healthz 200) on an existing PostgreSQL database, after the rounds, when a PostgreSQL scenario ran (0: none)")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{msg: err.Error(), reported: true}
	}
	if fs.NArg() > 0 {
		return nil, usageError{msg: fmt.Sprintf("bench: unexpected arguments: %q", fs.Args())}
	}
	for f := range strings.SplitSeq(*scenarios, ",") {
		if f = strings.TrimSpace(f); f != "" {
			c.Scenarios = append(c.Scenarios, f)
		}
	}
	for f := range strings.SplitSeq(*seeds, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 1 {
			return nil, usageError{msg: fmt.Sprintf("bench: -seeds %q: want positive counts", *seeds)}
		}
		c.Seeds = append(c.Seeds, n)
	}
	switch {
	case c.Rounds < 1:
		return nil, usageError{msg: "bench: -rounds must be at least 1"}
	case c.Warmup < 0 || c.Duration <= 0:
		return nil, usageError{msg: "bench: -warmup must not be negative and -duration must be positive"}
	case c.Workers < 1:
		return nil, usageError{msg: "bench: -workers must be at least 1"}
	case c.ListSeed < 20:
		return nil, usageError{msg: "bench: -list-seed must be at least 20, a full page"}
	case c.ColdStarts < 0:
		return nil, usageError{msg: "bench: -cold-starts must not be negative"}
	}
	return c, nil
}

// selected returns the scenarios to run, in round order.
func (c *benchConfig) selected() ([]scenario, error) {
	all := baseScenarios(c.ListSeed)
	for _, n := range c.Seeds {
		all = append(all, seededScenarios(n)...)
	}
	if len(c.Scenarios) == 0 {
		if c.NoopTS == "" {
			all = slices.DeleteFunc(all, func(s scenario) bool { return s.ts })
		}
		return all, nil
	}
	var out []scenario
	for _, name := range c.Scenarios {
		i := slices.IndexFunc(all, func(s scenario) bool { return s.name == name })
		if i < 0 {
			return nil, usageError{msg: fmt.Sprintf("bench: unknown scenario %q", name)}
		}
		if all[i].ts && c.NoopTS == "" {
			return nil, usageError{msg: fmt.Sprintf("bench: scenario %q needs -noop-ts", name)}
		}
		out = append(out, all[i])
	}
	return out, nil
}

// runBench is "ticketd-load bench": every round runs every scenario once,
// interleaved, each against a fresh server process (and a fresh database),
// then prints the medians over the rounds as a markdown table and the
// ratios issue 11's goals are stated in.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseBenchConfig(args, stderr)
	if err != nil {
		return err
	}
	scenarios, err := cfg.selected()
	if err != nil {
		return err
	}
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "ticketd-bench-")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
		cfg.WorkDir = dir
	} else if err := os.MkdirAll(cfg.WorkDir, 0o700); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	b := &bench{cfg: cfg, stderr: stderr, templates: map[int64]string{}}
	defer b.dropAll()

	var runs []benchRun
	for round := 1; round <= cfg.Rounds; round++ {
		for _, sc := range scenarios {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := b.runOne(ctx, sc, round)
			if err != nil {
				return fmt.Errorf("bench: %s, round %d: %w", sc.name, round, err)
			}
			b.logf("%-14s round %d: %7.1f calls/s  p50 %6.1f ms  p99 %6.1f ms  CPU %.2f ms/call  RSS %.1f MiB  failures %d %s",
				sc.name, round, r.CallsPS, r.P50MS, r.P99MS, r.CPUMS, r.RSSMiB, r.Failures, r.Errors)
			runs = append(runs, r)
		}
	}
	var cold []time.Duration
	if cfg.ColdStarts > 0 && slices.ContainsFunc(scenarios, scenario.postgres) {
		if cold, err = b.coldStarts(ctx, cfg.ColdStarts); err != nil {
			return fmt.Errorf("bench: cold start: %w", err)
		}
	}
	if cfg.JSONOut != "" {
		data, err := json.MarshalIndent(runs, "", "  ")
		if err == nil {
			err = os.WriteFile(cfg.JSONOut, append(data, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("bench: write -json-out: %w", err)
		}
	}
	if err := writeBenchTable(stdout, cfg, scenarios, runs, cold); err != nil {
		return err
	}
	if n := sumFailures(runs); n > 0 {
		return fmt.Errorf("bench: %d calls failed (isError results, transport errors, timeouts); see the log lines above", n)
	}
	return nil
}

// bench holds what a benchmark created, so it can all be removed.
type bench struct {
	cfg       *benchConfig
	stderr    io.Writer
	admin     *sql.DB
	seq       int
	templates map[int64]string // seeded template database by ticket count
	dbs       []string         // databases still to drop
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.stderr, "bench: "+format+"\n", args...)
}

// runOne starts a fresh server for sc, loads it and stops it.
func (b *bench) runOne(ctx context.Context, sc scenario, round int) (benchRun, error) {
	b.seq++
	dir := filepath.Join(b.cfg.WorkDir, fmt.Sprintf("%s-r%d", strings.ReplaceAll(sc.name, "@", "-"), round))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return benchRun{}, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return benchRun{}, err
	}
	// The per-tenant rate limits are off: one tenant's workers are the
	// whole load here, and the bench measures ticketd's cost per call, not
	// how fast it turns calls away (with the default 50 writes/s most
	// creates would be rate_limited answers). A tenant alone may use every
	// work slot, and its calls beyond them wait their turn, so every worker
	// runs on either database.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TICKETD_RATE_LIMIT_WRITES=0", "TICKETD_RATE_LIMIT_READS=0"}
	var dbURL string
	if sc.postgres() {
		if dbURL, err = b.freshDatabase(ctx, sc); err != nil {
			return benchRun{}, err
		}
		env = append(env, "TICKETD_DATABASE_URL="+dbURL)
	}
	var cmd *exec.Cmd
	switch {
	case sc.ts:
		cmd = exec.Command(b.cfg.Node, b.cfg.NoopTS, "--addr", addr)
	case sc.noop:
		cmd = exec.Command(b.cfg.Noop, "-addr", addr)
	default:
		// --dev: an HS256 secret in the data directory, the demo tenant
		// with project support, and ticketd's default info logging.
		cmd = exec.Command(b.cfg.Ticketd, "serve", "--dev", "--data-dir", dir, "--addr", addr)
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return benchRun{}, err
	}
	defer logFile.Close()
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logFile, logFile
	srv, err := startProcess(cmd)
	if err != nil {
		return benchRun{}, err
	}
	defer srv.stop()
	if err := srv.waitHealthy(ctx, "http://"+addr+"/healthz", 50*time.Millisecond); err != nil {
		return benchRun{}, fmt.Errorf("%w (log: %s)", err, logFile.Name())
	}
	token := "none"
	if !sc.noop {
		if token, err = mintToken(ctx, b.cfg.Ticketd, env, dir, addr); err != nil {
			return benchRun{}, err
		}
	}
	projects := []string{devProjectID}
	if sc.projects > 1 {
		if projects, err = addProjects(ctx, dbURL, sc.projects); err != nil {
			return benchRun{}, err
		}
	}
	workers := b.cfg.Workers
	lcfg := &config{
		URL: "http://" + addr + "/mcp", Token: token, Project: strings.Join(projects, ","), projects: projects, Workers: workers,
		Warmup: b.cfg.Warmup, Duration: b.cfg.Duration, Timeout: 30 * time.Second,
		Tool: sc.tool, Args: json.RawMessage(cmp.Or(sc.args, "{}")), RetryRatio: sc.retry,
		ServerPID: cmd.Process.Pid,
	}
	res, err := generate(ctx, lcfg)
	if err != nil {
		return benchRun{}, err
	}
	s := summarize(lcfg, res)
	// A run with fewer workers or no server figures measured some other
	// load: refuse it rather than put it in the table.
	if err := s.configured(); err != nil {
		return benchRun{}, err
	}
	if !s.Invariant.OK() {
		return benchRun{}, fmt.Errorf("retry invariant violated: %v", s.Invariant.Examples)
	}
	r := benchRun{
		Scenario: sc.name, Round: round, CallsPS: s.rate(s.Calls),
		P50MS: msFloat(s.All.P50), P99MS: msFloat(s.All.P99), CPUMS: msFloat(s.cpuPerCall()),
		DBCPUMS: msFloat(s.databaseCPUPerCall()), GenCPUMS: msFloat(s.generatorCPUPerCall()), Busy: s.machineBusy(),
		DBSeen: s.Machine.sawDatabase,
		RSSMiB: mib(s.Server.peakRSS), Calls: s.Calls,
		Failures: s.failures() + s.Timeouts,
	}
	if r.Failures > 0 {
		r.Errors = fmt.Sprintf("[%s; %s]", formatCodes(s.ToolErrors), strings.Join(s.Errors, "; "))
	}
	// Failed calls count in calls/s as if they were work: a run where more
	// than maxFailedShare of them failed measured the failures.
	if float64(r.Failures) > maxFailedShare*float64(r.Calls) {
		return benchRun{}, notAsConfigured{fmt.Errorf("%d of %d calls failed %s", r.Failures, r.Calls, r.Errors)}
	}
	return r, nil
}

// maxFailedShare is the share of a run's calls that may fail before the
// run is refused; below it, the failures show in the table and fail the
// command at the end.
const maxFailedShare = 0.01

// addProjects creates n projects of the benchmark's tenant in the database
// at dbURL (migrated by the server already) and returns their IDs.
func addProjects(ctx context.Context, dbURL string, n int) ([]string, error) {
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("spread%02d", i+1)
		if _, err := db.ExecContext(ctx, `INSERT INTO projects (tenant_id, id, key, name, created_at) VALUES ($1, $2, $3, $2, now())`,
			devTenant, ids[i], fmt.Sprintf("SP%02d", i+1)); err != nil {
			return nil, fmt.Errorf("add project %s: %w", ids[i], err)
		}
	}
	return ids, nil
}

// freshDatabase creates the run's PostgreSQL database: empty (ticketd
// migrates it at start), or a copy of a template seeded with sc.seed
// tickets, made once per size.
func (b *bench) freshDatabase(ctx context.Context, sc scenario) (string, error) {
	if b.admin == nil {
		admin, err := sql.Open("pgx", b.cfg.AdminURL)
		if err != nil {
			return "", fmt.Errorf("PostgreSQL admin connection: %w", err)
		}
		b.admin = admin
	}
	name := fmt.Sprintf("ticketd_bench_%d_%d", os.Getpid(), b.seq)
	stmt := "CREATE DATABASE " + name
	if sc.seed > 0 {
		tmpl, err := b.template(ctx, sc.seed)
		if err != nil {
			return "", err
		}
		// A file copy: much faster than WAL-logging a large template.
		stmt += " TEMPLATE " + tmpl + " STRATEGY FILE_COPY"
	}
	if _, err := b.admin.ExecContext(ctx, stmt); err != nil {
		return "", fmt.Errorf("create database (is PostgreSQL at %s running?): %w", redact(b.cfg.AdminURL), err)
	}
	b.dbs = append(b.dbs, name)
	return databaseURL(b.cfg.AdminURL, name)
}

// template returns a database migrated by ticketd and seeded with n
// tickets, creating it on first use.
func (b *bench) template(ctx context.Context, n int64) (string, error) {
	if name, ok := b.templates[n]; ok {
		return name, nil
	}
	name := fmt.Sprintf("ticketd_bench_%d_seed_%d", os.Getpid(), n)
	if _, err := b.admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create template database: %w", err)
	}
	b.dbs = append(b.dbs, name)
	u, err := databaseURL(b.cfg.AdminURL, name)
	if err != nil {
		return "", err
	}
	migrate := exec.CommandContext(ctx, b.cfg.Ticketd, "migrate")
	migrate.Env = []string{"PATH=" + os.Getenv("PATH"), "TICKETD_DATABASE_URL=" + u}
	if out, err := migrate.CombinedOutput(); err != nil {
		return "", fmt.Errorf("ticketd migrate: %w: %s", err, out)
	}
	db, err := sql.Open("pgx", u)
	if err != nil {
		return "", err
	}
	defer db.Close()
	start := time.Now()
	if err := seedTickets(ctx, db, seedSpec{Tenant: devTenant, Project: devProjectID, Key: devProjectKey, Name: "Support", Tickets: n}); err != nil {
		return "", err
	}
	b.logf("seeded %d tickets in %s", n, time.Since(start).Round(time.Millisecond))
	// A template must have no open connections when it is copied.
	if err := db.Close(); err != nil {
		return "", err
	}
	b.templates[n] = name
	return name, nil
}

// dropAll drops every database the benchmark created.
func (b *bench) dropAll() {
	if b.admin == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range slices.Backward(b.dbs) {
		if _, err := b.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			b.logf("could not drop database %s: %v", name, err)
		}
	}
	_ = b.admin.Close()
}

// databaseURL is admin with its database name replaced.
func databaseURL(admin, name string) (string, error) {
	u, err := url.Parse(admin)
	if err != nil {
		return "", fmt.Errorf("-pg-admin-url: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// freeLoopbackAddr asks the kernel for a free loopback port. Another
// process could take it before the server binds it; on a benchmark
// machine that is unlikely enough, and the start would then fail loudly.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// process is a started server; exited closes when it has been reaped.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startProcess(cmd *exec.Cmd) (*process, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server: %w", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// stop asks the server to shut down (SIGTERM) and kills it if it has not
// exited after 30s.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}

// waitHealthy polls url every interval until it answers 200, the server
// exits, or 30s pass.
func (p *process) waitHealthy(ctx context.Context, url string, every time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-p.exited:
			return errors.New("the server exited during start-up")
		case <-time.After(every):
		}
	}
	return fmt.Errorf("no answer from %s within 30s", url)
}

// coldStarts times n starts of ticketd serve, exec to the first /healthz
// 200 (polled every millisecond), on one PostgreSQL database that an
// untimed first start has migrated: the restart of a replica on an
// existing database. Production settings (an HS256 secret, no --dev), so
// nothing a development start adds is counted.
func (b *bench) coldStarts(ctx context.Context, n int) ([]time.Duration, error) {
	b.seq++
	dbURL, err := b.freshDatabase(ctx, scenario{})
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(b.cfg.WorkDir, "cold-start")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logFile, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	var out []time.Duration
	for i := 0; i <= n; i++ {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(b.cfg.Ticketd, "serve")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TICKETD_DATABASE_URL=" + dbURL,
			"TICKETD_ADDR=" + addr, "TICKETD_PUBLIC_URL=http://" + addr,
			"TICKETD_JWT_HS256_SECRET=bench-cold-start-secret-0123456789abcdef", "TICKETD_JWT_ISSUER=bench"}
		cmd.Stdout, cmd.Stderr = logFile, logFile
		start := time.Now()
		srv, err := startProcess(cmd)
		if err != nil {
			return nil, err
		}
		err = srv.waitHealthy(ctx, "http://"+addr+"/healthz", time.Millisecond)
		took := time.Since(start)
		srv.stop()
		if err != nil {
			return nil, fmt.Errorf("%w (log: %s)", err, logFile.Name())
		}
		if i == 0 {
			continue // the start that migrated the database
		}
		b.logf("cold start %d: %.0f ms", i, msFloat(took))
		out = append(out, took)
	}
	return out, nil
}

// mintToken asks ticketd for a dev token of the benchmark's tenant; the
// audience derives from the address, so it must be the server's.
func mintToken(ctx context.Context, ticketd string, env []string, dataDir, addr string) (string, error) {
	cmd := exec.CommandContext(ctx, ticketd, "token", "--dev", "--data-dir", dataDir, "--addr", addr,
		"--tenant", devTenant, "--subject", "bench", "--scope", "tickets:read tickets:write")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("ticketd token: %w: %s", err, ee.Stderr)
		}
		return "", fmt.Errorf("ticketd token: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

func sumFailures(runs []benchRun) int {
	n := 0
	for _, r := range runs {
		n += r.Failures
	}
	return n
}

// row is one scenario's medians over the rounds.
type row struct {
	sc                                               scenario
	callsPS, p50, p99, cpu, dbCPU, genCPU, busy, rss float64
	failures                                         int
	dbSeen                                           bool
}

func medians(scenarios []scenario, runs []benchRun) []row {
	rows := make([]row, 0, len(scenarios))
	for _, sc := range scenarios {
		var calls, p50, p99, cpu, dbCPU, genCPU, busy, rss []float64
		r := row{sc: sc}
		for _, x := range runs {
			if x.Scenario != sc.name {
				continue
			}
			calls, p50, p99 = append(calls, x.CallsPS), append(p50, x.P50MS), append(p99, x.P99MS)
			cpu, rss = append(cpu, x.CPUMS), append(rss, x.RSSMiB)
			dbCPU, genCPU, busy = append(dbCPU, x.DBCPUMS), append(genCPU, x.GenCPUMS), append(busy, x.Busy)
			r.failures += x.Failures
			r.dbSeen = r.dbSeen || x.DBSeen
		}
		r.callsPS, r.p50, r.p99, r.cpu, r.rss = median(calls), median(p50), median(p99), median(cpu), median(rss)
		r.dbCPU, r.genCPU, r.busy = median(dbCPU), median(genCPU), median(busy)
		rows = append(rows, r)
	}
	return rows
}

// median of xs (the mean of the middle two for an even count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// writeBenchTable prints the medians as the markdown table, then
// the ratios its goals use, for the scenarios that were run.
func writeBenchTable(w io.Writer, cfg *benchConfig, scenarios []scenario, runs []benchRun, cold []time.Duration) error {
	rows := medians(scenarios, runs)
	var b strings.Builder
	fmt.Fprintf(&b, "Medians of %d rounds; each run %s warm-up + %s measured, %d workers, a fresh server per run.\n\n",
		cfg.Rounds, cfg.Warmup, cfg.Duration, cfg.Workers)
	b.WriteString("| what | calls/s | p50 / p99 ms | server CPU per call | PostgreSQL CPU per call | load generator CPU per call | machine busy | peak RSS | failed calls |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		// The floors and SQLite use no PostgreSQL (what it does meanwhile is
		// not theirs), and a PostgreSQL out of sight cannot be measured.
		dbCPU := "—"
		if r.sc.postgres() && r.dbSeen {
			dbCPU = fmt.Sprintf("%.2f ms", r.dbCPU)
		}
		fmt.Fprintf(&b, "| %s | %.0f | %.1f / %.1f | %.2f ms | %s | %.2f ms | %.0f %% | %.1f MiB | %d |\n",
			r.sc.title, r.callsPS, r.p50, r.p99, r.cpu, dbCPU, r.genCPU, 100*r.busy, r.rss, r.failures)
	}
	find := func(name string) (row, bool) {
		i := slices.IndexFunc(rows, func(r row) bool { return r.sc.name == name })
		if i < 0 {
			return row{}, false
		}
		return rows[i], true
	}
	b.WriteString("\n")
	floor, haveFloor := find("noop")
	ratio := func(label, name string, goal string) {
		r, ok := find(name)
		if !ok || !haveFloor || floor.callsPS == 0 {
			return
		}
		fmt.Fprintf(&b, "- %s: %.2f× the floor's calls/s (goal %s)\n", label, r.callsPS/floor.callsPS, goal)
	}
	ratio("create/floor", "create", "≥ 0.7")
	ratio("replay/floor", "replay", "≥ 0.9")
	ratio("list/floor", "list", "≥ 0.7")
	ratio("create on SQLite/floor", "create-sqlite", "none")
	if ts, ok := find("noop-ts"); ok && ts.callsPS > 0 {
		if r, ok := find("replay"); ok {
			fmt.Fprintf(&b, "- replay/TypeScript floor: %.2f× its calls/s (goal ≥ 1.0)\n", r.callsPS/ts.callsPS)
		}
		if haveFloor {
			fmt.Fprintf(&b, "- TypeScript floor/go-sdk floor: %.2f× the calls/s\n", ts.callsPS/floor.callsPS)
		}
	} else if _, ok := find("replay"); ok {
		b.WriteString("- replay/TypeScript floor: not measured (no -noop-ts; bench-e2e.sh passes it when Node is installed)\n")
	}
	if one, ok := find("create"); ok && one.callsPS > 0 {
		if spread, ok := find("create-16p"); ok {
			fmt.Fprintf(&b, "- creates in one project/spread over %d: %.2f× the calls/s (goal within 15%%: 0.85 to 1.15)\n",
				spreadProjects, one.callsPS/spread.callsPS)
		}
	}
	if c, ok := find("create"); ok && haveFloor && floor.cpu > 0 {
		fmt.Fprintf(&b, "- CPU per call, create/floor: %.2f× (goal ≤ 1.6)\n", c.cpu/floor.cpu)
	}
	for _, r := range rows {
		if r.p50 > 0 {
			fmt.Fprintf(&b, "- p99/p50, %s: %.1f (goal ≤ 4)\n", r.sc.name, r.p99/r.p50)
		}
	}
	for i, n := range cfg.Seeds {
		if i == 0 {
			continue
		}
		small, large := humanCount(cfg.Seeds[0]), humanCount(n)
		for _, tool := range []string{"create", "list"} {
			a, okA := find(tool + "@" + small)
			z, okZ := find(tool + "@" + large)
			if okA && okZ && a.callsPS > 0 {
				fmt.Fprintf(&b, "- %s at %s vs %s stored: %.2f× (goal within ±10%%)\n", tool, large, small, z.callsPS/a.callsPS)
			}
		}
	}
	if len(cold) > 0 {
		ms := make([]float64, len(cold))
		for i, d := range cold {
			ms[i] = msFloat(d)
		}
		fmt.Fprintf(&b, "- cold start (exec → /healthz 200, existing PostgreSQL database): median %.0f ms, min %.0f, max %.0f over %d starts (goal ≤ 100 ms, DESIGN §24)\n",
			median(ms), slices.Min(ms), slices.Max(ms), len(ms))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
