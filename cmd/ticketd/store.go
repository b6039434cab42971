package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/observe"
	"github.com/ticketd/ticketd/internal/reconciler"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/jira"
	"github.com/ticketd/ticketd/internal/webhooks"
	"github.com/ticketd/ticketd/migrations"
)

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
func openStore(ctx context.Context, cfg *config, opts tickets.Options, onReconcile func(result string), approvals *approval.Options, logger *slog.Logger) (*db.DB, *tickets.Service, *webhooks.Service, *reconciler.Queue, error) {
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
	opts.Tracked = trackers(cfg, onReconcile, queue)
	if approvals != nil {
		opts.Approvals = approval.New(store.Gorm, *approvals)
	}
	svc := tickets.NewService(store.Gorm, opts)
	// Every command, every start: a credential declared since the last
	// start makes a stored row with a retired token_env usable.
	unmapped, err := svc.MapRetiredTokenEnvs(ctx)
	if err != nil {
		_ = store.Close()
		return nil, nil, nil, nil, err
	}
	for _, note := range unmapped {
		logger.Warn("tracker-backed project unusable", "note", note)
	}
	return store, svc, hooks, queue, nil
}

// trackers connects tracker-backed projects from cfg's tracker settings:
// the operator's credentials, the endpoint guard, the GitHub and Jira
// adapters with their per-host caps and breakers, and the reconciliation queue, settle window
// and lease; onReconcile (nil: none) counts the reconciliations.
func trackers(cfg *config, onReconcile func(result string), queue *reconciler.Queue) tracked.Options {
	t := tracked.Options{OnReconcile: onReconcile}
	t.Credentials, t.Guard = cfg.TrackerCredentials, cfg.trackerGuard()
	t.Open = tracker.ByKind(map[string]tracker.Opener{
		tracker.KindGitHub: github.Opener(github.Options{Timeout: cfg.TrackerTimeout, Credentials: cfg.TrackerCredentials,
			Getenv: cfg.getenv, Guard: t.Guard, HostConcurrency: cfg.TrackerHostConcurrency,
			BreakerFailures: cfg.TrackerBreakerFailures, BreakerCoolDown: cfg.TrackerBreakerCoolDown}),
		tracker.KindJira: jira.PortOpener(jira.Options{Timeout: cfg.TrackerTimeout, Credentials: cfg.TrackerCredentials,
			Getenv: cfg.getenv, Guard: t.Guard, HostConcurrency: cfg.TrackerHostConcurrency,
			BreakerFailures: cfg.TrackerBreakerFailures, BreakerCoolDown: cfg.TrackerBreakerCoolDown}),
	})
	t.Scheduler = queue
	t.Settle = cfg.ReconcileSettle
	t.Concurrency = cfg.TrackerConcurrency
	if cfg.TrackerTimeout > 0 {
		// Room for a list of several pages, a create and a duplicate's
		// comment and close within one lease.
		t.Lease = 6 * cfg.TrackerTimeout
	}
	return t
}

// trackerGuard is the tracker endpoint policy (docs/trackers.md): https
// to the listed hosts at public addresses; with allow-private, private and
// loopback addresses too, plain http only to those; --dev admits any host,
// as it does for webhooks.
func (c *config) trackerGuard() ssrf.Guard {
	if c.Dev {
		return ssrf.Guard{AllowPrivate: true}
	}
	return ssrf.Guard{AllowPrivate: c.TrackerAllowPrivate, PlainPrivate: true, Hosts: c.TrackerHosts}
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
