// Command ticketd-fakejira serves the Jira-shaped issue tracker of the test
// suite (internal/tracker/jiratest) on loopback, so a newcomer can watch a
// Jira-backed project reconcile a lost answer and a lagging search index
// without an Atlassian site (docs/trackers.md, "Jira").
//
//	ticketd-fakejira -addr 127.0.0.1:8092 -email bot@example.com -token local -fail drop -lag 5s
//
// Requests must carry Basic auth as -email:-token, or -pat as a Bearer
// token. -fail queues faults for the coming creates, comma-separated: drop
// (the issue is created, the answer lost), slow (created after -slow), 502
// (created, then 502), hang (created, no answer until the client goes
// away), 429, 401, 403 (nothing created), duplicate (filed twice).
// -fail-comments, -fail-edits and -fail-transitions queue the same faults
// for the coming comments, edits and transitions. -lag hides issues younger
// than it from search/jql, as Jira's index does; a get by key is never
// lagged. -users adds accounts user search finds (comma-separated email
// addresses). GET /_issues/KEY lists the project's issues with their
// comments, in Jira's JSON, for looking.
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

	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ticketd-fakejira:", err)
		os.Exit(1)
	}
}

var faults = map[string]jiratest.Fault{
	"drop": jiratest.DropAfterCreate, "slow": jiratest.SlowCreate, "502": jiratest.BadGatewayAfterCreate,
	"hang": jiratest.HangAfterCreate, "429": jiratest.TooManyRequests, "401": jiratest.Unauthorized,
	"403": jiratest.Forbidden, "duplicate": jiratest.DuplicateCreate,
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ticketd-fakejira", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8092", "loopback address to listen on")
	email := fs.String("email", "bot@example.com", "the account's email address (Basic auth)")
	token := fs.String("token", "local", "the account's API token (Basic auth as email:token)")
	pat := fs.String("pat", "", "a personal access token also admitted as Bearer (Data Center)")
	lag := fs.Duration("lag", 0, "hide issues younger than this from search/jql")
	slow := fs.Duration("slow", 15*time.Second, "how long a slow create takes")
	users := fs.String("users", "", "accounts user search finds, comma-separated email addresses")
	lists := map[string]*string{}
	for _, name := range []string{"fail", "fail-comments", "fail-edits", "fail-transitions"} {
		lists[name] = fs.String(name, "", "faults for the coming writes of its kind, comma-separated: drop, slow, 502, hang, 429, 401, 403, duplicate")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	s := jiratest.New(*email, *token)
	s.PAT, s.SlowDelay = *pat, *slow
	s.LagSearch(*lag)
	queues := map[string]func(...jiratest.Fault){
		"fail": s.FailCreates, "fail-comments": s.FailComments, "fail-edits": s.FailEdits, "fail-transitions": s.FailTransitions,
	}
	for name, list := range lists {
		if err := queueFaults(name, *list, queues[name]); err != nil {
			return err
		}
	}
	for k, u := range strings.Split(*users, ",") {
		if u = strings.TrimSpace(u); u != "" {
			local, _, _ := strings.Cut(u, "@")
			s.AddUser(jiratest.User{AccountID: fmt.Sprintf("acc-%d", k+1), DisplayName: local, Email: u})
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
	site := "http://" + ln.Addr().String()
	s.SetBaseURL(site)
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	mux.Handle("GET /_issues/", s.DumpHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "Jira-shaped tracker at %s (site), credential %s:%s\n", site, *email, *token)
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
func queueFaults(flagName, list string, queue func(...jiratest.Fault)) error {
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		f, ok := faults[name]
		if !ok {
			return fmt.Errorf("-%s %q: want drop, slow, 502, hang, 429, 401, 403 or duplicate", flagName, name)
		}
		queue(f)
	}
	return nil
}
