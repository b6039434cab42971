// Command ticketd-load measures ticketd's MCP create path end to end: workers
// call create_ticket over Streamable HTTP with fresh operation_ids and, at a
// chosen ratio, replays of earlier ones, then it reports throughput, latency
// per outcome, error codes, and checks the retry contract on what came back:
// one ticket per operation_id, and every replay returns that same ticket.
// With -update-ratio and -comment-ratio, fresh calls also update and comment
// on the tickets each worker created, and the check extends to them: one
// change (version bump or comment) per operation_id.
// With -tool it calls any other tool with fixed -args instead (list_tickets,
// or the noop tool of ticketd-noop). With -warmup, only calls that end in
// the window after the warm-up count; with -server-pid, the server's CPU
// time over that window and its peak RSS are read from /proc. With
// -operation-id every worker sends one identical create, which must make
// one ticket.
//
// It only talks to loopback addresses unless -allow-remote is given, and
// every run is bounded by -warmup plus -duration and, optionally, -requests.
//
//	ticketd-load -token "$TOKEN" -duration 10s -workers 8
//	ticketd-load -token "$TOKEN" -update-ratio 0.3 -comment-ratio 0.3
//	ticketd-load -token "$TOKEN" -tool list_tickets -args '{"limit":20}' -warmup 2s -server-pid 1234
//
// Two subcommands drive whole benchmarks: "ticketd-load bench" runs
// ticketd and the go-sdk floor side by side (see bench.go, make bench-e2e),
// and "ticketd-load seed" bulk-inserts tickets into a PostgreSQL database.
//
// Exit status: 0 when the run was clean, 1 when the invariant was violated or
// a call failed other than by a client-side timeout (or by rate_limited,
// with -expect-rate-limited), 2 for bad flags, 3 when the load did not run
// as configured (a session failed to connect within the connect timeout,
// retries included, a worker stopped early, the server could not be
// measured): its figures describe some smaller load and must not be
// reported as this one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	// Ctrl-C stops issuing calls and cancels the in-flight ones; the summary
	// of what ran so far is still printed.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	var uerr usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.As(err, &uerr):
		if !uerr.reported {
			fmt.Fprintf(os.Stderr, "ticketd-load: %v\n", err)
		}
		os.Exit(2)
	case errors.As(err, new(notAsConfigured)):
		fmt.Fprintf(os.Stderr, "ticketd-load: %v\n", err)
		os.Exit(3)
	default:
		fmt.Fprintf(os.Stderr, "ticketd-load: %v\n", err)
		os.Exit(1)
	}
}

// run is the whole program with its dependencies passed in, so the tests
// drive it in-process. args[0] is the program name.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 1 {
		switch args[1] {
		case "bench":
			return runBench(ctx, args[1:], stdout, stderr)
		case "seed":
			return runSeed(ctx, args[1:], stdout, stderr)
		}
	}
	cfg, err := parseConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	res, err := generate(ctx, cfg)
	if err != nil {
		return err
	}
	sum := summarize(cfg, res)
	if cfg.JSON {
		err = writeJSON(stdout, sum)
	} else {
		err = writeText(stdout, sum)
	}
	if err != nil {
		return err
	}
	return sum.verdict()
}

// config is the parsed command line.
type config struct {
	URL     string
	Token   string
	Project string // the -project flag as given
	// projects are Project's comma-separated IDs: worker i files into
	// projects[i % len(projects)].
	projects   []string
	Workers    int
	Duration   time.Duration
	Requests   int
	RetryRatio float64
	// UpdateRatio and CommentRatio are the shares of fresh calls that are
	// update_ticket and add_comment on the worker's own tickets.
	UpdateRatio, CommentRatio float64
	Timeout                   time.Duration
	AllowRemote               bool
	JSON                      bool
	// Tool is the tool called; create_ticket gets generated arguments,
	// any other tool the fixed Args.
	Tool      string
	Args      json.RawMessage
	Warmup    time.Duration
	ServerPID int // 0: no server measurements
	// ExpectRateLimited counts rate_limited answers as expected, not as
	// failed calls: a flood that ignores retry_after is refused on purpose.
	ExpectRateLimited bool
	// OperationID, when set, is the operation_id of every create, so that
	// all workers send one identical call at once (the burst of one
	// intended action that must make one ticket).
	OperationID string
}

const toolCreate = "create_ticket"

// windowed says whether only the calls ending in the measured window count
// (after a warm-up, or when server CPU is read over that window).
func (c *config) windowed() bool { return c.Warmup > 0 || c.ServerPID > 0 }

// usageError is a bad command line (exit status 2), as opposed to a run that
// found a problem (exit status 1).
type usageError struct {
	msg string
	// reported is set when the flag package already printed the error.
	reported bool
}

func (e usageError) Error() string { return e.msg }

// notAsConfigured says the load did not run as its flags describe (exit
// status 3): fewer sessions, workers or measurements than asked for.
type notAsConfigured struct{ err error }

func (e notAsConfigured) Error() string {
	return "the load did not run as configured: " + e.err.Error()
}

func (e notAsConfigured) Unwrap() error { return e.err }

func parseConfig(args []string, getenv func(string) string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.URL, "url", "http://127.0.0.1:8080/mcp", "ticketd's MCP endpoint, or the server's URL as the dev banner exports it (BASE), to which /mcp is added")
	// No default from the environment here: help must never print a token.
	fs.StringVar(&c.Token, "token", "", "bearer token with tickets:write (default $TICKETD_TOKEN)")
	fs.StringVar(&c.Project, "project", "support", "project_id the tickets are filed in; several, comma-separated, spread the workers over them (worker i files into the i-th, round robin)")
	fs.IntVar(&c.Workers, "workers", 8, "concurrent workers, each with its own MCP session")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "stop issuing calls after this long")
	fs.IntVar(&c.Requests, "requests", 0, "stop after this many calls in total (0: no cap; -duration still applies)")
	fs.Float64Var(&c.RetryRatio, "retry-ratio", 0.2, "fraction of calls that re-send an earlier operation_id of the same worker with the same input")
	fs.Float64Var(&c.UpdateRatio, "update-ratio", 0, "fraction of fresh calls that are update_ticket on a ticket the worker created (each a real change)")
	fs.Float64Var(&c.CommentRatio, "comment-ratio", 0, "fraction of fresh calls that are add_comment on a ticket the worker created")
	fs.DurationVar(&c.Timeout, "timeout", 5*time.Second, "timeout of each call")
	fs.BoolVar(&c.AllowRemote, "allow-remote", false, "allow a -url whose host is not a loopback address")
	fs.BoolVar(&c.JSON, "json", false, "print the summary as JSON")
	fs.StringVar(&c.Tool, "tool", toolCreate, "tool to call; any other than create_ticket is called with -args")
	toolArgs := fs.String("args", "{}", "JSON object of arguments for a -tool other than create_ticket")
	fs.DurationVar(&c.Warmup, "warmup", 0, "call for this long before the measured -duration starts")
	fs.BoolVar(&c.ExpectRateLimited, "expect-rate-limited", false, "count rate_limited answers (tool results, or 429 before the body) as expected, not as failed calls; every other failure, a session that will not open and a worker that stops still fail the run")
	fs.StringVar(&c.OperationID, "operation-id", "", "send every create_ticket with this operation_id and the same arguments, from every worker: identical calls, which must make one ticket (needs -retry-ratio 0 and no updates or comments)")
	fs.IntVar(&c.ServerPID, "server-pid", 0, "process ID of the server on this machine, to report its CPU per call and peak RSS from /proc")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{msg: err.Error(), reported: true}
	}
	if fs.NArg() > 0 {
		return nil, usageError{msg: fmt.Sprintf("unexpected arguments: %q", fs.Args())}
	}
	if c.Token == "" {
		c.Token = getenv("TICKETD_TOKEN")
	}
	c.Args = json.RawMessage(*toolArgs)
	if err := c.validate(); err != nil {
		return nil, usageError{msg: err.Error()}
	}
	return c, nil
}

func (c *config) validate() error {
	switch {
	case c.Token == "":
		return errors.New("no token: pass -token or set TICKETD_TOKEN")
	case c.Workers < 1:
		return errors.New("-workers must be at least 1")
	case c.Duration <= 0:
		// A duration is always required so that every run ends by itself,
		// even when -requests can never be reached.
		return errors.New("-duration must be positive")
	case c.Requests < 0:
		return errors.New("-requests must not be negative")
	case c.RetryRatio < 0 || c.RetryRatio > 1 || c.RetryRatio != c.RetryRatio:
		return errors.New("-retry-ratio must be between 0 and 1")
	case c.UpdateRatio < 0 || c.CommentRatio < 0 || c.UpdateRatio+c.CommentRatio > 1 ||
		c.UpdateRatio != c.UpdateRatio || c.CommentRatio != c.CommentRatio:
		return errors.New("-update-ratio and -comment-ratio must be between 0 and 1 and add up to at most 1")
	case c.Timeout <= 0:
		return errors.New("-timeout must be positive")
	case c.Tool == "":
		return errors.New("-tool must not be empty")
	case c.Warmup < 0:
		return errors.New("-warmup must not be negative")
	case c.ServerPID < 0:
		return errors.New("-server-pid must not be negative")
	case c.OperationID != "" && (c.RetryRatio != 0 || c.UpdateRatio != 0 || c.CommentRatio != 0 || c.Tool != toolCreate):
		return errors.New("-operation-id sends identical creates: it needs -retry-ratio 0, no -update-ratio or -comment-ratio, and -tool create_ticket")
	case c.OperationID != "" && strings.Contains(c.Project, ","):
		return errors.New("-operation-id sends identical creates: it needs one -project")
	}
	c.projects = c.projects[:0]
	for id := range strings.SplitSeq(c.Project, ",") {
		if id = strings.TrimSpace(id); id == "" {
			return fmt.Errorf("-project %q: want one or more comma-separated project IDs", c.Project)
		}
		c.projects = append(c.projects, id)
	}
	var obj map[string]any
	if err := json.Unmarshal(c.Args, &obj); err != nil || obj == nil {
		return fmt.Errorf("-args %q: want a JSON object", c.Args)
	}
	if err := checkTarget(c.URL, c.AllowRemote); err != nil {
		return err
	}
	c.URL = mcpEndpoint(c.URL)
	return nil
}

// mcpEndpoint is raw with /mcp added when it names a server and no path
// (the dev banner's BASE, http://127.0.0.1:PORT), so the URL the banner
// prints works whichever port the server took; a URL with a path is used
// as it is.
func mcpEndpoint(raw string) string {
	if u, err := url.Parse(raw); err == nil && strings.Trim(u.Path, "/") == "" && u.RawQuery == "" {
		return strings.TrimSuffix(raw, "/") + "/mcp"
	}
	return raw
}

// checkTarget refuses a URL that is not plain HTTP(S) to a loopback host
// unless allowRemote: generating load against other machines is forbidden
// here by default, and a typo must not turn into traffic elsewhere. Names
// other than "localhost" are refused rather than resolved, since a name's
// address can change between this check and the dial.
func checkTarget(raw string, allowRemote bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("-url: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("-url %q: scheme must be http or https", raw)
	}
	if u.Hostname() == "" {
		return fmt.Errorf("-url %q: no host", raw)
	}
	if allowRemote || isLoopback(u.Hostname()) {
		return nil
	}
	return fmt.Errorf("-url %q: host %s is not a loopback address (127.0.0.0/8, ::1, localhost); pass -allow-remote to load another machine", raw, u.Hostname())
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	// Unmap so that ::ffff:127.0.0.1 counts as the IPv4 loopback it is.
	return err == nil && addr.Unmap().IsLoopback()
}
