// Package pgaftest runs a real pg_auto_failover formation for tests: a
// monitor and two PostgreSQL nodes (a primary and its synchronous hot
// standby) on one host, each on its own port of 127.0.0.1 (and no other
// address) and temporary data directory, removed with every process when
// the test ends, pass or fail.
//
// The test that uses it runs only where `make test` found or installed
// pg_auto_failover (scripts/ensure-pg-auto-failover.sh) and put the path of
// pg_autoctl in TICKETD_PG_AUTOCTL; elsewhere it is skipped with the reason.
// pg_autoctl refuses to run as root, so as root (CI) every process runs as
// the postgres OS user that Debian's PostgreSQL packages create.
package pgaftest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver for the monitor and node checks
)

// EnvAutoctl names the variable holding the path of pg_autoctl; make test
// sets it from scripts/ensure-pg-auto-failover.sh.
const EnvAutoctl = "TICKETD_PG_AUTOCTL"

// EnvUnavailable holds why pg_auto_failover could not be installed (the
// script's message); make test sets it instead of EnvAutoctl, and the test is
// skipped with it.
const EnvUnavailable = "TICKETD_PG_AUTO_FAILOVER_UNAVAILABLE"

// socketDir is where Debian's PostgreSQL creates its Unix sockets.
const socketDir = "/var/run/postgresql"

// Database is the database the nodes create for ticketd.
const Database = "ticketd"

// Setting is one pg_auto_failover setting the formation is tuned with.
type Setting struct {
	Name, Value, Default, Why string
}

// MonitorSettings are the monitor's failover timings (GUCs of the
// pgautofailover extension in the monitor's postgresql.auto.conf, set with
// ALTER SYSTEM and a reload). With the defaults a primary lost whole (keeper
// and postgres) is replaced after about 50 s: 20 s before the node counts as
// unhealthy, then 30 s waiting for it to demote itself, which a dead keeper
// never reports. docs/scale.md recommends these values and docs/deploy.md sets them.
var MonitorSettings = []Setting{
	{"pgautofailover.health_check_period", "1000", "5000", "ms between the monitor's connection checks of each node"},
	{"pgautofailover.health_check_timeout", "1000", "5000", "ms a check's connect may take"},
	{"pgautofailover.health_check_max_retries", "1", "2", "failed retries before a check counts as failed"},
	{"pgautofailover.health_check_retry_delay", "500", "2000", "ms between those retries"},
	{"pgautofailover.node_considered_unhealthy_timeout", "2000", "20000", "ms without a keeper report (and with failed checks) before a node is unhealthy"},
	{"pgautofailover.primary_demote_timeout", "4000", "30000", "ms given an unhealthy primary to demote itself before the standby is promoted anyway; keep it above the keepers' network_partition_timeout"},
	{"pgautofailover.startup_grace_period", "1000", "10000", "ms after the monitor starts before it fails anything over"},
}

// KeeperSettings are set on every node's keeper with `pg_autoctl config set`
// (either node can be primary).
var KeeperSettings = []Setting{
	{"timeout.network_partition_timeout", "2", "20", "s a primary that reaches neither monitor nor standby keeps serving before it stops itself; below primary_demote_timeout, so two primaries never overlap"},
}

// Node is one PostgreSQL node of the formation (or the monitor).
type Node struct {
	Name   string
	Port   int
	PGData string
	cmd    *exec.Cmd
	log    string
}

// Cluster is a running formation.
type Cluster struct {
	Monitor *Node
	Nodes   [2]*Node
	base    string
	autoctl string
	pgctl   string
	cred    *syscall.Credential
	env     []string
	// fixedPorts: this formation holds the fixedPorts lock until cleanup.
	fixedPorts bool
}

// Start brings up a monitor and two nodes, tuned with MonitorSettings and
// KeeperSettings, and returns once node 0 is primary and node 1 its
// synchronous secondary. Everything is stopped and removed at cleanup.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	autoctl := os.Getenv(EnvAutoctl)
	if autoctl == "" {
		if why := os.Getenv(EnvUnavailable); why != "" {
			tb.Skipf("pg_auto_failover is not installed and could not be: %s", why)
		}
		tb.Skipf("the failover tests need pg_auto_failover: make test sets %s (scripts/ensure-pg-auto-failover.sh installs it)", EnvAutoctl)
	}
	c := &Cluster{autoctl: autoctl}
	var err error
	if c.pgctl, err = findPGCtl(); err != nil {
		tb.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			tb.Fatalf("pg_autoctl refuses root, and there is no postgres OS user to run it as: %v", err)
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	} else if err := syscall.Access(socketDir, 2 /* W_OK */); err != nil {
		// Debian's PostgreSQL puts its Unix sockets there, and pg_autoctl
		// offers no way to move them before the first start.
		tb.Skipf("the failover tests run PostgreSQL as this user, who cannot write %s (%v): run them as root (CI does) or as postgres", socketDir, err)
	}
	c.base, err = os.MkdirTemp("", "ticketd-pgaf-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.cleanup(tb) })
	// pg_autoctl keeps its configuration and state under the XDG
	// directories, so pointing them into base keeps the home directory
	// untouched and removes everything with base.
	c.env = []string{
		"PATH=" + filepath.Dir(c.pgctl) + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + c.base,
		"XDG_CONFIG_HOME=" + filepath.Join(c.base, "config"),
		"XDG_DATA_HOME=" + filepath.Join(c.base, "data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(c.base, "run"),
	}
	for _, d := range []string{"config", "data", "run"} {
		if err := os.Mkdir(filepath.Join(c.base, d), 0o700); err != nil {
			tb.Fatal(err)
		}
	}
	if c.cred != nil {
		if err := chownAll(c.base, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			tb.Fatal(err)
		}
	}

	ports, fixed := pickPorts(tb)
	c.fixedPorts = fixed
	c.Monitor = &Node{Name: "monitor", Port: ports[0], PGData: filepath.Join(c.base, "monitor")}
	for i := range c.Nodes {
		c.Nodes[i] = &Node{Name: fmt.Sprintf("node%d", i+1), Port: ports[i+1], PGData: filepath.Join(c.base, fmt.Sprintf("node%d", i+1))}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.start(ctx); err != nil {
		tb.Fatalf("start pg_auto_failover formation: %v\n%s", err, c.Logs())
	}
	return c
}

func (c *Cluster) start(ctx context.Context) error {
	if err := c.spawn(c.Monitor, "create", "monitor", "--pgdata", c.Monitor.PGData, "--pgport", strconv.Itoa(c.Monitor.Port),
		"--pgctl", c.pgctl, "--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run"); err != nil {
		return err
	}
	mon, err := sql.Open("pgx", c.MonitorURL())
	if err != nil {
		return err
	}
	defer mon.Close()
	if err := waitUntil(ctx, func() bool {
		var n int
		return mon.QueryRowContext(ctx, "SELECT count(*) FROM pgautofailover.node").Scan(&n) == nil
	}); err != nil {
		return fmt.Errorf("monitor did not answer: %w", err)
	}
	for _, s := range MonitorSettings {
		if _, err := mon.ExecContext(ctx, fmt.Sprintf("ALTER SYSTEM SET %s = %s", s.Name, s.Value)); err != nil {
			return fmt.Errorf("monitor setting %s: %w", s.Name, err)
		}
	}
	if _, err := mon.ExecContext(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("reload monitor settings: %w", err)
	}

	for i, n := range c.Nodes {
		if err := c.spawn(n, "create", "postgres", "--pgdata", n.PGData, "--pgport", strconv.Itoa(n.Port), "--pgctl", c.pgctl,
			"--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--name", n.Name, "--monitor", c.monitorNodeURL(), "--dbname", Database,
			"--auth", "trust", "--no-ssl", "--run"); err != nil {
			return err
		}
		if i == 0 {
			if err := waitUntil(ctx, func() bool { return c.states(ctx, mon)[n.Name] == "single" }); err != nil {
				return fmt.Errorf("%s did not become single: %w", n.Name, err)
			}
		}
	}
	// The standby's pg_basebackup waits for a checkpoint, which PostgreSQL
	// spreads over minutes unless one is asked for at once.
	primary, err := sql.Open("pgx", c.NodeURL(0))
	if err != nil {
		return err
	}
	defer primary.Close()
	err = waitUntil(ctx, func() bool {
		s := c.states(ctx, mon)
		if s[c.Nodes[0].Name] == "primary" && s[c.Nodes[1].Name] == "secondary" {
			return true
		}
		_, _ = primary.ExecContext(ctx, "CHECKPOINT")
		return false
	})
	if err != nil {
		return fmt.Errorf("the standby did not become secondary: %v: %w", c.states(ctx, mon), err)
	}
	if err := c.loopbackOnly(ctx); err != nil {
		return err
	}
	for _, n := range c.Nodes {
		for _, s := range KeeperSettings {
			if out, err := c.autoctlCmd("config", "set", "--pgdata", n.PGData, s.Name, s.Value).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: pg_autoctl config set %s: %v\n%s", n.Name, s.Name, err, out)
			}
		}
	}
	return nil
}

// loopbackOnly checks that the monitor and both nodes listen on 127.0.0.1
// alone (pg_autoctl's --listen; its default is every interface), so a
// formation of trust-authenticated servers is never reachable from the
// network.
func (c *Cluster) loopbackOnly(ctx context.Context) error {
	for _, url := range []string{c.MonitorURL(), c.NodeURL(0), c.NodeURL(1)} {
		conn, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		var listen string
		err = conn.QueryRowContext(ctx, "SHOW listen_addresses").Scan(&listen)
		conn.Close()
		if err != nil {
			return fmt.Errorf("read listen_addresses: %w", err)
		}
		if listen != "127.0.0.1" {
			return fmt.Errorf("%s listens on %q, want 127.0.0.1 only", url, listen)
		}
	}
	return nil
}

// states maps node name to its state as reported to the monitor, for the
// nodes whose goal state is the same (no transition in progress).
func (c *Cluster) states(ctx context.Context, mon *sql.DB) map[string]string {
	rows, err := mon.QueryContext(ctx, "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node")
	if err != nil {
		return nil
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, reported, goal string
		if rows.Scan(&name, &reported, &goal) == nil && reported == goal {
			out[name] = reported
		}
	}
	return out
}

// URL is the multi-host URL ticketd connects with: whichever node accepts
// writes, as the monitor's `pg_autoctl show uri --formation default` gives
// it, with a short connect timeout so a node that does not answer is
// skipped quickly.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/%s?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		c.Nodes[0].Port, c.Nodes[1].Port, Database)
}

// NodeURL is the URL of node i alone, primary or standby.
func (c *Cluster) NodeURL(i int) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", c.Nodes[i].Port, Database)
}

// MonitorURL is the monitor's database, as the superuser.
func (c *Cluster) MonitorURL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/pg_auto_failover?sslmode=disable&connect_timeout=2", c.Monitor.Port)
}

func (c *Cluster) monitorNodeURL() string {
	return fmt.Sprintf("postgres://autoctl_node@127.0.0.1:%d/pg_auto_failover?sslmode=disable", c.Monitor.Port)
}

// States returns each node's state as the monitor reports it right now,
// e.g. "node2=wait_primary/wait_primary" (reported/goal).
func (c *Cluster) States(ctx context.Context) string {
	mon, err := sql.Open("pgx", c.MonitorURL())
	if err != nil {
		return err.Error()
	}
	defer mon.Close()
	rows, err := mon.QueryContext(ctx, "SELECT nodename, reportedstate::text, goalstate::text FROM pgautofailover.node ORDER BY nodeid")
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name, reported, goal string
		if err := rows.Scan(&name, &reported, &goal); err != nil {
			return err.Error()
		}
		out = append(out, name+"="+reported+"/"+goal)
	}
	return strings.Join(out, " ")
}

// Kill9 kills node i whole with SIGKILL, as a host losing power would: its
// keeper and every PostgreSQL process, with no chance to demote, checkpoint
// or tell the monitor.
func (c *Cluster) Kill9(i int) error {
	n := c.Nodes[i]
	pid := postmasterPID(n.PGData)
	err := syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	if pid > 0 {
		// PostgreSQL runs in the keeper's process group; this is for a
		// postmaster that left it.
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = n.cmd.Wait()
	if err != nil {
		return fmt.Errorf("kill -9 %s: %w", n.Name, err)
	}
	return nil
}

// Logs returns the tail of every process's log, for a failing test.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, n := range append([]*Node{c.Monitor}, c.Nodes[:]...) {
		if n == nil || n.log == "" {
			continue
		}
		raw, _ := os.ReadFile(n.log)
		lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
		fmt.Fprintf(&b, "--- %s (last 40 lines of %s)\n%s\n", n.Name, n.log, strings.Join(lines[max(0, len(lines)-40):], "\n"))
	}
	return b.String()
}
