// Command ticketd-fakegithub serves the GitHub-shaped issue tracker of the
// test suite (internal/tracker/githubtest) on loopback, so a newcomer can
// watch a tracker-backed project reconcile a lost answer without a GitHub
// account (docs/trackers.md, "Try it").
//
//	ticketd-fakegithub -addr 127.0.0.1:8091 -token ghp_local -fail drop
//
// -fail queues faults for the coming creates, comma-separated: drop (the
// issue is created, the answer lost), slow (created after -slow), 502
// (created, then 502), ratelimit (403 secondary rate limit, nothing
// created), 429, duplicate (filed twice). -fail-comments and -fail-edits
// queue the same faults for the coming comments and edits (a comment is
// what is created; an edit is applied, never twice). -lag hides issues and
// comments younger than it from lists, as a lagging index would. GET /_issues/OWNER/NAME lists the
// issues it holds with their comments, in GitHub's JSON, for looking.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ticketd-fakegithub:", err)
		os.Exit(1)
	}
}

var faults = map[string]githubtest.Fault{
	"drop": githubtest.DropAfterCreate, "slow": githubtest.SlowCreate, "502": githubtest.BadGatewayAfterCreate,
	"ratelimit": githubtest.SecondaryRateLimit, "429": githubtest.TooManyRequests, "duplicate": githubtest.DuplicateCreate,
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ticketd-fakegithub", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8091", "loopback address to listen on")
	token := fs.String("token", "ghp_local", "the token requests must bear (Authorization: Bearer …)")
	fail := fs.String("fail", "", "faults for the coming creates, comma-separated: drop, slow, 502, ratelimit, 429, duplicate")
	slow := fs.Duration("slow", 15*time.Second, "how long a slow create takes")
	failComments := fs.String("fail-comments", "", "faults for the coming comments, as -fail")
	failEdits := fs.String("fail-edits", "", "faults for the coming edits, as -fail")
	lag := fs.Duration("lag", 0, "hide issues and comments younger than this from lists")
	if err := fs.Parse(args); err != nil {
		return err
	}
	gh := githubtest.New(*token)
	gh.SlowDelay = *slow
	gh.LagLists(*lag)
	for flagName, q := range map[string]struct {
		list  string
		queue func(...githubtest.Fault)
	}{"fail": {*fail, gh.FailCreates}, "fail-comments": {*failComments, gh.FailComments}, "fail-edits": {*failEdits, gh.FailEdits}} {
		if err := queueFaults(flagName, q.list, q.queue); err != nil {
			return err
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", *addr)
	if err != nil {
		return err
	}
	if ap, ok := ln.Addr().(*net.TCPAddr); !ok || !ap.IP.IsLoopback() {
		_ = ln.Close()
		return fmt.Errorf("-addr %s: listen on loopback only", *addr)
	}
	base := "http://" + ln.Addr().String() + "/"
	gh.SetBaseURL(base)
	mux := http.NewServeMux()
	mux.Handle("/", gh.Handler())
	mux.Handle("GET /_issues/", gh.DumpHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "GitHub-shaped tracker at %s (api_url), token %s\n", base, *token)
	errs := make(chan error, 1)
	go func() { errs <- srv.Serve(ln) }()
	select {
	case err := <-errs:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// queueFaults queues the comma-separated faults of list with queue.
func queueFaults(flagName, list string, queue func(...githubtest.Fault)) error {
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		f, ok := faults[name]
		if !ok {
			return fmt.Errorf("-%s %q: want drop, slow, 502, ratelimit, 429 or duplicate", flagName, name)
		}
		queue(f)
	}
	return nil
}
