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
	"github.com/ticketd/ticketd/internal/console"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/reconciler"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/webhooks"
	"github.com/ticketd/ticketd/migrations"
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
	// shutdownTimeout is how long in-flight requests get to finish after
	// SIGTERM; it fits within the 30s grace period orchestrators commonly
	// give before SIGKILL.
	shutdownTimeout = 20 * time.Second
	// tracingFlushTimeout bounds sending the spans still batched at exit.
	tracingFlushTimeout = 5 * time.Second
)

// serve runs the HTTP server until ctx ends, then shuts down gracefully:
// it stops accepting connections and lets in-flight requests finish. Ticket
// writes already run detached from request cancellation, so a request cut
// off at the deadline leaves its write committed or rolled back, never half
// done.
func serve(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	pprofAddr := fs.String("pprof-addr", "", "serve net/http/pprof on this loopback address, e.g. 127.0.0.1:6060 (default off)")
	cfg, logger, cursorKey, err := setup(fs, groupHTTP|groupDB|groupMigrate|groupAuth|groupLog|groupCursor|groupDev|groupMetrics|groupEdge|groupWebhook|groupReplica|groupApprove, args, getenv, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	edgeCfg, err := cfg.edge()
	if err != nil {
		return err
	}
	for _, w := range cfg.warnings() {
		logger.Warn(w)
	}
	if w := cfg.cursorWarning(); w != "" {
		logger.Warn(w)
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
	// ask for them (Setup runs before the database and the edge take their
	// tracers), and the metrics every transport and the service report to.
	stopTracing, err := observe.Setup(ctx)
	if err != nil {
		return err
	}
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingFlushTimeout)
		defer cancel()
		if err := stopTracing(flushCtx); err != nil {
			logger.Warn("tracing", "error", err)
		}
	}()
	metrics := observe.New(observe.Options{Logger: logger, Actions: tickets.Actions(), ApprovalEvents: approval.Events(), ReconcileResults: tickets.ReconcileResults()})

	approvals, err := cfg.approvalOptions()
	if err != nil {
		return err
	}
	approvals.OnEvent = metrics.Approval
	store, svc, hooks, queue, err := openStore(ctx, cfg, tickets.Options{CursorKey: cursorKey, OnWrite: server.ObserveWrites(metrics),
		Tracked: tickets.TrackedOptions{OnReconcile: metrics.Reconciliation}}, &approvals, logger)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := collectStore(metrics, store); err != nil {
		return err
	}
	// Deliveries run beside the HTTP server on every replica and stop after
	// it, so a write accepted during the shutdown is still delivered (by
	// this replica or, if it is killed first, by any other).
	if err := hooks.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("start webhook delivery: %w", err)
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := hooks.Stop(stopCtx); err != nil {
			logger.Warn("webhook delivery did not stop cleanly; unfinished attempts are retried after restart", "err", err)
		}
	}()
	// Reconciliation runs on every replica too: the queue hands each due
	// operation to one of them.
	if err := queue.Start(context.WithoutCancel(ctx), svc); err != nil {
		return err
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
		defer cancel()
		if err := queue.Stop(stopCtx); err != nil {
			logger.Warn("reconciliation did not stop cleanly; its operations are picked up after restart", "err", err)
		}
	}()
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
	authServers, err := server.ParseAuthorizationServers(cfg.AuthorizationServers)
	if err != nil {
		return fmt.Errorf("TICKETD_OAUTH_AUTHORIZATION_SERVERS: %w", err)
	}
	handler, err := server.New(server.Config{
		AuthorizationServers: authServers,
		Service:              svc,
		Verifier:             verifier,
		PublicURL:            cfg.PublicURL,
		Issuer:               cfg.Issuer,
		Logger:               logger,
		Ready:                readyCheck,
		Edge:                 edgeCfg,
		Metrics:              metrics,
		Webhooks:             hooks,
		// The console's sessions live beside the tickets.
		ConsoleSessions: console.NewSessions(store.Gorm),
		// With a listener of their own, metrics stay off the public one.
		MetricsElsewhere: cfg.MetricsAddr != "",
	})
	if err != nil {
		return fmt.Errorf("build HTTP handler: %w", err)
	}

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
	if cfg.Dev {
		baseURL := cfg.PublicURL
		if _, port, _ := net.SplitHostPort(cfg.Addr); cfg.derivedPublicURL && port == "0" {
			baseURL = bound
		}
		now := time.Now()
		tok, err := mintDevToken(authCfg, now)
		if err == nil {
			err = printDevBanner(stdout, banner{Self: self, BaseURL: baseURL, PublicURL: cfg.PublicURL, DataDir: cfg.DataDir, Token: tok, Expires: now.Add(defaultTokenTTL)})
		}
		if err != nil {
			_ = srv.Close()
			return err
		}
	}

	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "grace", shutdownTimeout)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("graceful shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// prepare builds the logger and the cursor key serve and stdio need, from
// settings parseConfig has already checked (validate).
func (c *config) prepare(stderr io.Writer) (*slog.Logger, []byte, error) {
	logger, err := c.logger(stderr)
	if err != nil {
		return nil, nil, err
	}
	cursorKey, err := c.cursorKey()
	if err != nil {
		return nil, nil, err
	}
	return logger, cursorKey, nil
}

// openDB opens the configured database, creating --dev's data directory
// first when the database lives in it.
func openDB(ctx context.Context, cfg *config) (*db.DB, error) {
	if err := ensureDevDir(cfg); err != nil {
		return nil, err
	}
	store, err := db.OpenWith(ctx, cfg.DatabaseURL, db.Options{Session: cfg.DBSession})
	if err != nil {
		return nil, fmt.Errorf("database (TICKETD_DATABASE_URL): %w", err)
	}
	return store, nil
}

// openStore opens the database, applies migrations unless disabled, and
// builds the ticket service on it with opts and the webhook outbox, so that
// every write, whichever command makes it, is told to the registered
// webhooks, and with the GitHub connector and the reconciliation queue, so
// that a tracker-backed create made by any command is settled. The webhook
// service delivers and the queue reconciles only once started (serve does).
func openStore(ctx context.Context, cfg *config, opts tickets.Options, approvals *approval.Options, logger *slog.Logger) (*db.DB, *tickets.Service, *webhooks.Service, *reconciler.Queue, error) {
	if opts.CursorKey == nil && cfg.Dev {
		// Here, after every check, so a bad setting never writes the data
		// directory.
		key, err := devCursorKey(cfg.DataDir)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		opts.CursorKey = key
	}
	store, err := openDB(ctx, cfg)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	// SQL spans under the request's; a no-op unless observe.Setup turned tracing on.
	if err := observe.TraceGORM(store.Gorm); err != nil {
		_ = store.Close()
		return nil, nil, nil, nil, err
	}
	if cfg.Migrate {
		v, err := migrateUp(ctx, store)
		if err != nil {
			_ = store.Close()
			return nil, nil, nil, nil, err
		}
		logger.Info("database ready", "dialect", store.Dialect, "schema_version", v)
	}
	if cfg.ReadDatabaseURL != "" {
		if err := store.AttachReplica(ctx, cfg.ReadDatabaseURL); err != nil {
			_ = store.Close()
			return nil, nil, nil, nil, fmt.Errorf("read replica (TICKETD_READ_DATABASE_URL): %w", err)
		}
		opts.Reads = store.Replica.Reads
	}
	hooks, err := webhooks.New(store, webhooks.Options{
		RetryMin:    cfg.WebhookRetryMin,
		MaxAttempts: cfg.WebhookMaxAttempts,
		Concurrency: cfg.WebhookConcurrency,
		RescueAfter: cfg.WebhookRescueAfter,
		// Development receivers listen on loopback (examples/webhook-receiver).
		AllowPrivate: cfg.WebhookAllowPrivate || cfg.Dev,
		Logger:       logger,
	})
	if err != nil {
		_ = store.Close()
		return nil, nil, nil, nil, err
	}
	opts.Outbox, opts.Deliveries = webhooks.TicketOutbox(hooks), hooks
	queue, err := reconciler.New(store, reconciler.Options{Logger: logger})
	if err != nil {
		_ = store.Close()
		return nil, nil, nil, nil, err
	}
	opts.Tracked.Open = github.Opener(github.Options{Timeout: cfg.TrackerTimeout})
	opts.Tracked.Scheduler = queue
	opts.Tracked.Settle = cfg.ReconcileSettle
	if cfg.TrackerTimeout > 0 {
		// Room for a list of several pages, a create and a duplicate's
		// comment and close within one lease.
		opts.Tracked.Lease = 6 * cfg.TrackerTimeout
	}
	if approvals != nil {
		opts.Approvals = approval.New(store.Gorm, *approvals)
	}
	svc := tickets.NewService(store.Gorm, opts)
	return store, svc, hooks, queue, nil
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

func migrateUp(ctx context.Context, store *db.DB) (int64, error) {
	sqlDB, err := store.Gorm.DB()
	if err != nil {
		return 0, fmt.Errorf("database handle: %w", err)
	}
	v, err := migrations.Up(ctx, sqlDB, string(store.Dialect))
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	// The webhook queue's own tables, versioned by River.
	if err := webhooks.Migrate(ctx, store); err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	return v, nil
}

// openProbe opens the readiness check's own one-connection pool, so /readyz
// answers from the database's state, never from the service's pool being
// busy: with all 20 of its connections taken by a flood, a ping through it
// would queue and time out, and a healthy replica would be taken out of
// rotation just when it is needed.
func openProbe(ctx context.Context, databaseURL string) (check func(context.Context) error, closeFn func(), err error) {
	probe, err := db.Open(ctx, databaseURL)
	if err != nil {
		return nil, nil, fmt.Errorf("readiness probe database (TICKETD_DATABASE_URL): %w", err)
	}
	sqlDB, err := probe.Gorm.DB()
	if err != nil {
		_ = probe.Close()
		return nil, nil, fmt.Errorf("readiness probe database handle: %w", err)
	}
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
	return sqlDB.PingContext, func() { _ = probe.Close() }, nil
}
