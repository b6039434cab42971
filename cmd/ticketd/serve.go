package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/authn"
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/reconciler"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// HTTP server limits. Tool calls are short, so generous fixed timeouts bound
// slow or stuck clients without cutting off real work.
const (
	readHeaderTimeout = 10 * time.Second
	// maxHeaderBytes bounds a request's header block (net/http answers 431
	// past it) well below net/http's 1 MiB default: a 934 KB bad token cost
	// 23 ms of CPU before any check could refuse it. The 16 KiB bound on
	// Authorization (authn.MaxAuthorization) fits with room for the rest.
	maxHeaderBytes = 64 << 10
	readTimeout    = 30 * time.Second
	writeTimeout   = 2 * time.Minute
	idleTimeout    = 2 * time.Minute
	// tracingFlushTimeout bounds sending the spans still batched at exit.
	tracingFlushTimeout = 5 * time.Second
)

// serve runs the HTTP server until ctx ends, then shuts down gracefully:
// it stops accepting connections and lets in-flight requests finish. Ticket
// writes already run detached from request cancellation, so a request cut
// off at the deadline leaves its write committed or rolled back, never half
// done. In order: check the settings, open the store and the services over
// it, start the workers beside the HTTP server, then serve and drain.
func serve(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	pprofAddr := fs.String("pprof-addr", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060 (default off)")
	cfg, logger, cursorKey, err := setup(fs, groupHTTP|groupDB|groupMigrate|groupAuth|groupLog|groupCursor|groupDev|groupMetrics|groupEdge|groupWebhook|groupTracker|groupReplica|groupApprove|groupTools, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, w := range append(cfg.warnings(), cfg.cursorWarning(), cfg.approvalWarning()) {
		if w != "" {
			logger.Warn(w)
		}
	}
	if *pprofAddr != "" {
		stopPprof, err := startPprof(ctx, *pprofAddr, logger)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	// The JWKS refresh outlives ctx by the shutdown, so requests still in
	// flight can verify against fresh keys.
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAuth()
	verifier, authCfg, err := cfg.verifier(authCtx)
	if err != nil {
		return err
	}

	// Telemetry: traces only when the standard OTEL_EXPORTER_OTLP_* variables
	// ask for them (before the database and the edge take their tracers),
	// and the metrics every transport and the service report to.
	flushTracing, err := startTracing(ctx, logger)
	if err != nil {
		return err
	}
	defer flushTracing()
	metrics := observe.New(observe.Options{Logger: logger, Actions: tickets.Actions(), ApprovalEvents: approval.Events(), ReconcileResults: tracked.ReconcileResults()})
	store, svc, hooks, queue, err := openServices(ctx, cfg, cursorKey, metrics, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	stopWorkers, err := startWorkers(ctx, hooks, queue, svc, cfg.ShutdownGrace, logger)
	if err != nil {
		return err
	}
	defer stopWorkers()
	if cfg.Dev {
		if err := seedDev(ctx, svc); err != nil {
			return err
		}
	}

	readyCheck, closeProbe, err := openProbe(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer closeProbe()
	// --dev's person signs in to the console with a single-use code the
	// banner prints, which this process alone holds.
	var codes *console.SignInCodes
	if cfg.Dev {
		codes = console.NewSignInCodes(nil)
	}
	handler, err := newHandler(cfg, store, svc, hooks, verifier, metrics, readyCheck, codes, logger)
	if err != nil {
		return err
	}
	return serveAndDrain(ctx, cfg, handler, metrics, logger, func(bound string) error {
		return announceDev(cfg, self, bound, authCfg, codes, stdout)
	})
}

// newHandler builds the HTTP handler (server.New) over the opened services.
func newHandler(cfg *config, store *db.DB, svc *tickets.Service, hooks *webhooks.Service, verifier *authn.Verifier, metrics *observe.Metrics, ready func(context.Context) error, codes *console.SignInCodes, logger *slog.Logger) (http.Handler, error) {
	edgeCfg, err := cfg.edge()
	if err != nil {
		return nil, err
	}
	handler, err := server.New(server.Config{
		AuthorizationServers: cfg.AuthorizationServers,
		Service:              svc,
		Verifier:             verifier,
		PublicURL:            cfg.PublicURL,
		Issuer:               cfg.Issuer,
		Logger:               logger,
		Ready:                ready,
		Edge:                 edgeCfg,
		Metrics:              metrics,
		Webhooks:             hooks,
		// The console's sessions live beside the tickets.
		ConsoleSessions:    console.NewSessions(store.Gorm),
		ConsoleSignInCodes: codes,
		// With a listener of their own, metrics stay off the public one.
		MetricsElsewhere: cfg.MetricsAddr != "",
	})
	if err != nil {
		return nil, fmt.Errorf("build HTTP handler: %w", err)
	}
	return handler, nil
}

// startTracing sets up tracing (observe.Setup); the returned flush sends
// the spans still batched, within tracingFlushTimeout.
func startTracing(ctx context.Context, logger *slog.Logger) (flush func(), err error) {
	stop, err := observe.Setup(ctx)
	if err != nil {
		return nil, err
	}
	return func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := stop(flushCtx); err != nil {
			logger.Warn("tracing", "error", err)
		}
	}, nil
}

// openServices opens the store and the services serve runs over it
// (openStore), reporting to metrics: writes, reconciliations, approvals, and
// the store's own gauges.
func openServices(ctx context.Context, cfg *config, cursorKey []byte, metrics *observe.Metrics, logger *slog.Logger) (*db.DB, *tickets.Service, *webhooks.Service, *reconciler.Queue, error) {
	approvals, err := cfg.approvalOptions()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	approvals.OnEvent = metrics.Approval
	store, svc, hooks, queue, err := openStore(ctx, cfg, tickets.Options{CursorKey: cursorKey, OnWrite: server.ObserveWrites(metrics)},
		metrics.Reconciliation, &approvals, logger)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if err := collectStore(metrics, store); err != nil {
		_ = store.Close()
		return nil, nil, nil, nil, err
	}
	return store, svc, hooks, queue, nil
}

// startWorkers starts webhook delivery and tracker reconciliation beside the
// HTTP server; the returned stop ends them, after the server has drained.
// Both run on every replica: a write accepted during the shutdown is still
// delivered (by this replica or, if it is killed first, by any other), and
// the queue hands each due operation to one of the replicas.
func startWorkers(ctx context.Context, hooks *webhooks.Service, queue *reconciler.Queue, svc *tickets.Service, grace time.Duration, logger *slog.Logger) (stop func(), err error) {
	if err := hooks.Start(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("start webhook delivery: %w", err)
	}
	stopHooks := func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		if err := hooks.Stop(stopCtx); err != nil {
			logger.Warn("webhook delivery did not stop cleanly; unfinished attempts are retried after restart", "err", err)
		}
	}
	if err := queue.Start(context.WithoutCancel(ctx), svc); err != nil {
		stopHooks()
		return nil, err
	}
	return func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
		defer cancel()
		if err := queue.Stop(stopCtx); err != nil {
			logger.Warn("reconciliation did not stop cleanly; its operations are picked up after restart", "err", err)
		}
		stopHooks()
	}, nil
}

// serveAndDrain listens on TICKETD_ADDR (and TICKETD_METRICS_ADDR), calls
// listening with the bound URL, and serves handler until ctx ends or serving
// fails; then it lets in-flight requests finish and be answered for up to
// TICKETD_SHUTDOWN_GRACE.
func serveAndDrain(ctx context.Context, cfg *config, handler http.Handler, metrics *observe.Metrics, logger *slog.Logger, listening func(bound string) error) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (TICKETD_ADDR): %w", cfg.Addr, err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 2)
	go func() { serveErr <- fmt.Errorf("serve HTTP: %w", srv.Serve(ln)) }()
	if cfg.MetricsAddr != "" {
		metricsSrv, err := serveMetrics(ctx, cfg.MetricsAddr, metrics, logger, serveErr)
		if err != nil {
			_ = srv.Close()
			return err
		}
		defer metricsSrv.Close()
	}

	// The bound address, not TICKETD_ADDR, because with port 0 only it
	// says which port was picked.
	bound := "http://" + ln.Addr().String()
	logger.Info("listening", "url", bound, "public_url", cfg.PublicURL, "dev", cfg.Dev)
	if err := listening(bound); err != nil {
		_ = srv.Close()
		return err
	}

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", cfg.ShutdownGrace)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// announceDev prints --dev's banner (the URLs, the agent's token and the
// person's console sign-in link, a code issued from codes) once the server
// listens at bound; outside --dev it does nothing.
func announceDev(cfg *config, self, bound string, authCfg authn.Config, codes *console.SignInCodes, stdout io.Writer) error {
	if !cfg.Dev {
		return nil
	}
	baseURL := cfg.PublicURL
	if _, port, _ := net.SplitHostPort(cfg.Addr); cfg.derivedPublicURL && port == "0" {
		baseURL = bound
	}
	now := time.Now()
	tok, err := mintDevToken(authCfg, now)
	if err != nil {
		return err
	}
	code := codes.Issue(devPerson)
	return printDevBanner(stdout, banner{Self: self, BaseURL: baseURL, PublicURL: cfg.PublicURL, DataDir: cfg.DataDir, Token: tok,
		Expires: now.Add(defaultTokenTTL), SignInCode: code})
}

// collectStore adds the database's gauges to metrics: the connection pool,
// and the webhook deliveries still waiting in the outbox.
func collectStore(metrics *observe.Metrics, store *db.DB) error {
	sqlDB, err := store.Gorm.DB()
	if err != nil {
		return fmt.Errorf("database handle: %w", err)
	}
	if err := metrics.CollectDB(sqlDB); err != nil {
		return err
	}
	if store.Replica != nil {
		if err := metrics.CollectReplica(store.Replica.Lag, store.Replica.Served); err != nil {
			return err
		}
	}
	return metrics.CollectOutboxPending(func(ctx context.Context) (int64, error) { return webhooks.PendingDeliveries(ctx, store.Gorm) })
}

// serveMetrics serves /metrics alone on addr (TICKETD_METRICS_ADDR) until
// the returned server is closed; a failure to serve is sent to errs.
func serveMetrics(ctx context.Context, addr string, metrics *observe.Metrics, logger *slog.Logger, errs chan<- error) (*http.Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s (TICKETD_METRICS_ADDR): %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET "+server.MetricsPath, metrics.Handler())
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("serve metrics: %w", err)
		}
	}()
	logger.Info("serving metrics", "url", "http://"+ln.Addr().String()+server.MetricsPath)
	return srv, nil
}
