// Command webhook-receiver is a reference receiver for ticketd's webhooks
// and a development listener: it verifies each delivery's signature and
// timestamp, acts on each webhook-id once (deduplicating in its own SQLite
// table) and prints what it received.
//
//	go run ./examples/webhook-receiver -secret whsec_… [-addr 127.0.0.1:8787] [-db webhook-receiver.db]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ticketd/ticketd/examples/webhook-receiver/receiver"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "webhook-receiver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("webhook-receiver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8787", "listen address")
	dbPath := fs.String("db", "webhook-receiver.db", "SQLite file that remembers the webhook-ids already handled")
	secret := fs.String("secret", getenv("TICKETD_WEBHOOK_SECRET"), "the webhook's signing secret (whsec_…), or TICKETD_WEBHOOK_SECRET")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *secret == "" {
		return errors.New("-secret (or TICKETD_WEBHOOK_SECRET) is required: the whsec_… value ticketd returned when the webhook was created")
	}
	r, err := receiver.Open(*dbPath, *secret)
	if err != nil {
		return err
	}
	defer r.Close()
	r.Act = func(ev receiver.Event) error {
		_, err := fmt.Fprintf(stdout, "%s %s webhook-id=%s operation_id=%s data=%s\n",
			time.Now().UTC().Format(time.RFC3339), ev.Type, ev.WebhookID, ev.OperationID, ev.Data)
		return err
	}
	srv := &http.Server{Addr: *addr, Handler: r, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	fmt.Fprintf(stdout, "listening on http://%s/ (dedupe table in %s)\n", *addr, *dbPath)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return srv.Shutdown(shutCtx)
	}
}
