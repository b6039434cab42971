package webhooks

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/jobqueue"
	"github.com/ticketd/ticketd/internal/ssrf"
)

// queueName is the River queue webhook deliveries run on.
const queueName = "webhooks"

// recordTimeout bounds the bookkeeping after an attempt, which runs even
// when the worker is being stopped so that a sent request is never left
// unrecorded.
const recordTimeout = 10 * time.Second

// maxResponseHeader bounds a receiver's response headers (docs/contract.md#fair-share): Go's
// default is 10 MiB per response, so a few hostile receivers answering at
// once could make ticketd hold hundreds of MiB. A receiver that needs more
// than 64 KiB of headers to say 200 is broken either way.
const maxResponseHeader = 64 << 10

// newJobLead is how far before its insert a new delivery is queued. The
// queue is taken in scheduled order, and a job put back for being over its
// share (shares), or retried, is scheduled for the moment it comes due;
// River's scheduler makes such jobs available in one batch every 5s. Queued
// at its insert, a new delivery stood behind every job that had come due
// before it, and a hanging receiver's backlog came due by the hundred: other
// tenants' new deliveries waited while the whole backlog was fetched and put
// back again (docs/perf.md, the hanging receiver). Queued a lead earlier, it
// goes ahead of every job that came due within the lead before it; the jobs
// put back or retried yield to new deliveries for that long at most.
const newJobLead = 10 * time.Second

// queueAhead schedules a delivery job inserted to run now newJobLead
// earlier; a job scheduled for later (none today) keeps its time.
func queueAhead(_ context.Context, p *rivertype.JobInsertParams) error {
	if p.Queue == queueName && p.State == rivertype.JobStateAvailable && p.ScheduledAt == nil {
		at := time.Now().Add(-newJobLead)
		p.ScheduledAt = &at
	}
	return nil
}

// Service registers webhooks, enqueues deliveries inside a write's
// transaction and, once started, delivers them.
type Service struct {
	db      *gorm.DB
	dialect db.Dialect
	opts    Options
	guard   ssrf.Guard
	client  *river.Client[*sql.Tx]
	http    *http.Client
	shares  *shares
	rescue  *rescuer
}

// New builds the service over d, whose schema must be migrated (goose's
// migrations and then Migrate). Call Start to run delivery workers; a
// service that is never started still enqueues.
func New(d *db.DB, opts Options) (*Service, error) {
	opts = opts.withDefaults()
	driver, err := jobqueue.Driver(d)
	if err != nil {
		return nil, err
	}
	s := &Service{
		db: d.Gorm, dialect: d.Dialect, opts: opts, guard: ssrf.Guard{AllowPrivate: opts.AllowPrivate, Resolver: opts.Resolver},
		shares: newShares(opts.Concurrency, opts.TenantShare, opts.SubscriptionShare, opts.AttemptTimeout),
	}
	s.http = &http.Client{
		Transport: &http.Transport{
			DialContext:       s.guard.DialContext,
			ForceAttemptHTTP2: true,
			// As many as one subscription may have in flight, borrowing
			// idle workers (share.go): with 2, a busy receiver's other
			// attempts each opened and closed a connection of their own.
			MaxIdleConnsPerHost:    opts.Concurrency,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    opts.AttemptTimeout,
			ResponseHeaderTimeout:  opts.AttemptTimeout,
			MaxResponseHeaderBytes: maxResponseHeader,
		},
		// A redirect would leave the checked URL (and could aim at a
		// refused address through a fresh name); receivers must answer.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &deliveryWorker{s: s}); err != nil {
		return nil, fmt.Errorf("register webhook worker: %w", err)
	}
	// River cancels a job's context after this; the attempt itself is
	// bounded by AttemptTimeout and the bookkeeping after it runs detached.
	jobTimeout := opts.AttemptTimeout + leaseMargin
	s.client, err = river.NewClient(driver, &river.Config{
		ID:                opts.WorkerID,
		Logger:            opts.Logger,
		MaxAttempts:       opts.MaxAttempts,
		PollOnly:          true, // neither driver can LISTEN; polling is the pick-up path
		FetchPollInterval: opts.PollInterval,
		// Short, so that jobs put back for being over their share (shares)
		// cost the other tenants' jobs little time in the fetch order.
		FetchCooldown:        min(opts.PollInterval, 20*time.Millisecond),
		JobTimeout:           jobTimeout,
		RescueStuckJobsAfter: opts.RescueAfter,
		Queues:               map[string]river.QueueConfig{queueName: {MaxWorkers: opts.Concurrency}},
		Workers:              workers,
		Hooks:                []rivertype.Hook{river.HookInsertBeginFunc(queueAhead)},
	})
	if err != nil {
		return nil, fmt.Errorf("webhook queue: %w", err)
	}
	s.rescue = newRescuer(driver.GetExecutor(), opts.RescueAfter, opts.Logger)
	return s, nil
}

// Migrate applies the job queue's own schema (River's river_* tables),
// which River versions separately from ticketd's goose migrations. Call it
// at start-up after migrations.Up and before New; it is a no-op once
// applied. River applies each of its versions in its own transaction (one
// adds an enum value a later one uses, which PostgreSQL refuses in one
// transaction), so on PostgreSQL a session advisory lock, held on a
// connection of its own, serialises replicas that start together. A
// schema already current (every start but the first after an upgrade) is
// recognised first by one read, without the lock.
func Migrate(ctx context.Context, d *db.DB) error {
	driver, err := jobqueue.Driver(d)
	if err != nil {
		return err
	}
	m, err := rivermigrate.New(driver, nil)
	if err != nil {
		return fmt.Errorf("webhook queue migrations: %w", err)
	}
	if riverCurrent(ctx, d, m.AllVersions()) {
		return nil
	}
	if d.Dialect == db.Postgres {
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			return fmt.Errorf("webhook queue migrations: %w", err)
		}
		conn, err := sqlDB.Conn(ctx)
		if err != nil {
			return fmt.Errorf("webhook queue migrations: %w", err)
		}
		defer conn.Close()
		if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock(hashtext('ticketd.webhooks.migrate'))"); err != nil {
			return fmt.Errorf("webhook queue migrations: lock: %w", err)
		}
		defer func() {
			_, _ = conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock(hashtext('ticketd.webhooks.migrate'))")
		}()
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("webhook queue migrations: %w", err)
	}
	return nil
}

// riverCurrent says whether River's main migration line stands at the
// newest of versions, from river_migration alone. River's own check
// (Migrator.Validate) asks information_schema first, which on a backend
// with cold catalog caches took most of the start-up's database time
// (docs/perf.md, cold start). Any error (no table yet, an older layout)
// answers false, and Migrate takes the full path.
func riverCurrent(ctx context.Context, d *db.DB, versions []rivermigrate.Migration) bool {
	if len(versions) == 0 {
		return false
	}
	var applied sql.NullInt64
	err := d.Gorm.WithContext(ctx).Raw(`SELECT max(version) FROM river_migration WHERE line = 'main'`).Row().Scan(&applied)
	return err == nil && applied.Valid && applied.Int64 == int64(versions[len(versions)-1].Version)
}

// sqlTxOf returns the *sql.Tx under a GORM transaction: River inserts its
// job through it, so the job commits or rolls back with the write.
func sqlTxOf(tx *gorm.DB) (*sql.Tx, error) {
	switch p := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		return p, nil
	case *gorm.PreparedStmtTX:
		if t, ok := p.Tx.(*sql.Tx); ok {
			return t, nil
		}
	}
	return nil, ErrNoTransaction
}

// Start runs this replica's delivery workers until Stop. Every replica may
// run them: the queue hands each due attempt to one worker.
func (s *Service) Start(ctx context.Context) error {
	if err := s.client.Start(ctx); err != nil {
		return fmt.Errorf("start webhook workers: %w", err)
	}
	s.rescue.start()
	return nil
}

// Stop lets attempts in flight finish until ctx ends, then cancels them;
// a cancelled attempt is recorded and its delivery retried later.
func (s *Service) Stop(ctx context.Context) error {
	s.rescue.close()
	if err := s.client.Stop(ctx); err != nil {
		if err := s.client.StopAndCancel(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("stop webhook workers: %w", err)
		}
	}
	return nil
}

func (s *Service) insertOpts() *river.InsertOpts {
	return &river.InsertOpts{Queue: queueName, MaxAttempts: s.opts.MaxAttempts}
}

func nullUUID(id uuid.UUID) uuid.NullUUID {
	return uuid.NullUUID{UUID: id, Valid: id != uuid.Nil}
}

// Retry sends a finished delivery again, on operator request, with the
// same webhook-id and a fresh budget of attempts. Errors: ErrNotFound;
// ErrConflict when the delivery is still pending or its webhook disabled.
func (s *Service) Retry(ctx context.Context, tenant string, subscriptionID, deliveryID uuid.UUID) (Delivery, error) {
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		sub, err := getSubscription(s.lockRow(tx), tenant, subscriptionID)
		if err != nil {
			return err
		}
		if sub.Status != SubscriptionActive {
			return fmt.Errorf("%w: webhook %s is disabled; register it again to resume deliveries", ErrConflict, subscriptionID)
		}
		row, err := getDelivery(s.lockRow(tx), tenant, subscriptionID, deliveryID)
		if err != nil {
			return err
		}
		if row.Status == StatusPending {
			return fmt.Errorf("%w: delivery %s is still pending", ErrConflict, deliveryID)
		}
		err = tx.Model(&deliveryRow{}).Where("tenant_id = ? AND id = ?", tenant, deliveryID).
			Updates(map[string]any{"status": StatusPending, "updated_at": time.Now().UTC()}).Error
		if err != nil {
			return fmt.Errorf("reopen delivery %s: %w", deliveryID, err)
		}
		sqlTx, err := sqlTxOf(tx)
		if err != nil {
			return err
		}
		if _, err := s.client.InsertTx(ctx, sqlTx, deliveryArgs{Tenant: tenant, DeliveryID: deliveryID, SubscriptionID: subscriptionID}, s.insertOpts()); err != nil {
			return fmt.Errorf("queue delivery %s: %w", deliveryID, err)
		}
		return nil
	})
	if err != nil {
		return Delivery{}, err
	}
	return s.Delivery(ctx, tenant, subscriptionID, deliveryID)
}

// backoff is the delay after a failed attempt n (1-based): RetryMin
// doubling, capped at RetryMax, plus up to 25% jitter so that receivers
// recovering from an outage are not hit by every replica in lockstep.
func (s *Service) backoff(n int) time.Duration {
	d := s.opts.RetryMin
	for i := 1; i < n && d < s.opts.RetryMax; i++ {
		d *= 2
	}
	d = min(d, s.opts.RetryMax)
	return d + rand.N(d/4+1)
}
