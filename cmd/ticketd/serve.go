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

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/server"
	"github.com/ticketd/ticketd/internal/tickets"
	"github.com/ticketd/ticketd/internal/webhooks"
	"github.com/ticketd/ticketd/migrations"
)

// HTTP server limits. Tool calls are short, so generous fixed timeouts bound
// slow or stuck clients without cutting off real work.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = 30 * time.Second
	writeTimeout      = 2 * time.Minute
	idleTimeout       = 2 * time.Minute
	// shutdownTimeout is how long in-flight requests get to finish after
	// SIGTERM; it fits within the 30s grace period orchestrators commonly
	// give before SIGKILL.
	shutdownTimeout = 20 * time.Second
)

// serve runs the HTTP server until ctx ends, then shuts down gracefully:
// it stops accepting connections and lets in-flight requests finish. Ticket
// writes already run detached from request cancellation, so a request cut
// off at the deadline leaves its write committed or rolled back, never half
// done.
func serve(ctx context.Context, self string, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg, err := parseConfig(fs, groupHTTP|groupDB|groupMigrate|groupAuth|groupLog|groupCursor|groupDev|groupWebhook, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	logger, cursorKey, err := cfg.prepare(stderr)
	if err != nil {
		return err
	}
	if err := cfg.checkWebhook(); err != nil {
		return err
	}
	for _, w := range cfg.warnings() {
		logger.Warn(w)
	}
	// The JWKS refresh outlives ctx by the shutdown, so requests still in
	// flight can verify against fresh keys.
	authCtx, stopAuth := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAuth()
	verifier, authCfg, err := cfg.verifier(authCtx)
	if err != nil {
		return err
	}

	store, svc, hooks, err := openStore(ctx, cfg, cursorKey, logger)
	if err != nil {
		return err
	}
	defer store.Close()
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
	if cfg.Dev {
		if err := seedDev(ctx, svc); err != nil {
			return err
		}
	}

	sqlDB, err := store.Gorm.DB()
	if err != nil {
		return fmt.Errorf("database handle: %w", err)
	}
	handler, err := server.New(server.Config{
		Service:   svc,
		Verifier:  verifier,
		PublicURL: cfg.PublicURL,
		Issuer:    cfg.Issuer,
		Logger:    logger,
		Ready:     sqlDB.PingContext,
		Webhooks:  hooks,
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
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()

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
		return fmt.Errorf("serve HTTP: %w", err)
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

// prepare runs the start-up checks serve and stdio share, in the order that
// keeps a bad setting from touching the disk or the network, and returns the
// logger and the cursor key they need.
func (c *config) prepare(stderr io.Writer) (*slog.Logger, []byte, error) {
	logger, err := c.logger(stderr)
	if err != nil {
		return nil, nil, err
	}
	if err := c.checkHTTP(); err != nil {
		return nil, nil, err
	}
	if err := c.checkDB(); err != nil {
		return nil, nil, err
	}
	cursorKey, err := c.cursorKey()
	if err != nil {
		return nil, nil, err
	}
	return logger, cursorKey, nil
}

// openStore opens the database, applies migrations unless disabled, and
// builds the ticket service on it with the webhook outbox, so that every
// write, whichever command makes it, is told to the registered webhooks.
// The webhook service delivers only once started (serve does).
func openStore(ctx context.Context, cfg *config, cursorKey []byte, logger *slog.Logger) (*db.DB, *tickets.Service, *webhooks.Service, error) {
	if err := ensureDevDir(cfg); err != nil {
		return nil, nil, nil, err
	}
	store, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("database (TICKETD_DATABASE_URL): %w", err)
	}
	if cfg.Migrate {
		v, err := migrateUp(ctx, store)
		if err != nil {
			_ = store.Close()
			return nil, nil, nil, err
		}
		logger.Info("database ready", "dialect", store.Dialect, "schema_version", v)
	}
	hooks, err := webhooks.New(store, webhooks.Options{
		RetryMin:    cfg.WebhookRetryMin,
		MaxAttempts: cfg.WebhookMaxAttempts,
		// Development receivers listen on loopback (ticketd webhooks listen).
		AllowPrivate: cfg.WebhookAllowPrivate || cfg.Dev,
		Logger:       logger,
	})
	if err != nil {
		_ = store.Close()
		return nil, nil, nil, err
	}
	svc := tickets.NewService(store.Gorm, tickets.Options{CursorKey: cursorKey, Outbox: webhooks.TicketOutbox(hooks)})
	return store, svc, hooks, nil
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
