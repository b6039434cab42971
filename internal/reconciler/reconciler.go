// Package reconciler is the durable job that settles operations whose
// effect in an external tracker is pending or unknown (docs/contract.md#tracker-backed-projects). The job
// is queued with River in the transaction that claims the operation, so a
// replica that dies after the claim, or between sending and recording,
// leaves a job that any replica runs: it looks at the tracker before any
// request is sent again (internal/tickets decides; this package schedules).
package reconciler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/jobqueue"
	"github.com/ticketd/ticketd/internal/operations"
)

// queueName is the River queue reconciliations run on, apart from webhook
// deliveries so neither can starve the other.
const queueName = "reconcile"

// Reconciler does one round of reconciliation and says when to look again
// (tickets.Service implements it).
type Reconciler interface {
	ReconcileDue(ctx context.Context, key operations.Key) (next time.Time, done bool, err error)
}

// Options tune the queue. Zero values take the defaults.
type Options struct {
	// PollInterval is how often an idle worker looks for due jobs (default 500ms).
	PollInterval time.Duration
	// JobTimeout bounds one round (default 2m): the lease of the operation
	// bounds the tracker calls within it.
	JobTimeout time.Duration
	// RescueAfter hands a job that looks stuck (its replica died) to
	// another worker (default 5m).
	RescueAfter time.Duration
	// Logger receives the queue's logs (default: discarded).
	Logger *slog.Logger
}

// Queue schedules and runs reconciliations.
type Queue struct {
	client *river.Client[*sql.Tx]
	worker *worker
}

type jobArgs struct {
	Tenant      string    `json:"tenant"`
	Action      string    `json:"action"`
	OperationID uuid.UUID `json:"operation_id"`
}

func (jobArgs) Kind() string { return "tracker_reconcile" }

type worker struct {
	river.WorkerDefaults[jobArgs]
	r Reconciler
}

// Work runs one round; an operation still unsettled snoozes the job until
// its next check, which spends no attempt, so the job lasts as long as the
// operation needs it.
func (w *worker) Work(ctx context.Context, job *river.Job[jobArgs]) error {
	key := operations.Key{Tenant: job.Args.Tenant, Action: job.Args.Action, OperationID: job.Args.OperationID}
	next, done, err := w.r.ReconcileDue(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("reconcile %s: %w", key, err)
	case done:
		return nil
	}
	return river.JobSnooze(max(time.Until(next), 0))
}

// New builds the queue over d (migrated, River's tables included). Jobs
// are worked only after Start.
func New(d *db.DB, opts Options) (*Queue, error) {
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.JobTimeout <= 0 {
		opts.JobTimeout = 2 * time.Minute
	}
	if opts.RescueAfter <= 0 {
		opts.RescueAfter = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	driver, err := jobqueue.Driver(d)
	if err != nil {
		return nil, err
	}
	q := &Queue{worker: &worker{}}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, q.worker); err != nil {
		return nil, fmt.Errorf("register reconcile worker: %w", err)
	}
	q.client, err = river.NewClient(driver, &river.Config{
		Logger:               opts.Logger,
		MaxAttempts:          1000, // errors only: an unsettled operation snoozes
		PollOnly:             true,
		FetchPollInterval:    opts.PollInterval,
		FetchCooldown:        min(opts.PollInterval, 100*time.Millisecond),
		JobTimeout:           opts.JobTimeout,
		RescueStuckJobsAfter: max(opts.RescueAfter, opts.JobTimeout+time.Second),
		Queues:               map[string]river.QueueConfig{queueName: {MaxWorkers: 4}},
		Workers:              workers,
	})
	if err != nil {
		return nil, fmt.Errorf("reconcile queue: %w", err)
	}
	return q, nil
}

// ErrNoTransaction: Schedule was called outside a transaction.
var ErrNoTransaction = errors.New("reconciler: Schedule needs the claiming transaction")

// Schedule queues key's reconciliation for at, inside tx: the job exists
// exactly when the claim committed.
func (q *Queue) Schedule(tx *gorm.DB, key operations.Key, at time.Time) error {
	var sqlTx *sql.Tx
	switch p := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		sqlTx = p
	case *gorm.PreparedStmtTX:
		sqlTx, _ = p.Tx.(*sql.Tx)
	}
	if sqlTx == nil {
		return ErrNoTransaction
	}
	args := jobArgs{Tenant: key.Tenant, Action: key.Action, OperationID: key.OperationID}
	if _, err := q.client.InsertTx(tx.Statement.Context, sqlTx, args, &river.InsertOpts{Queue: queueName, ScheduledAt: at}); err != nil {
		return fmt.Errorf("queue reconciliation of %s: %w", key, err)
	}
	return nil
}

// Start runs this replica's workers with r until Stop.
func (q *Queue) Start(ctx context.Context, r Reconciler) error {
	q.worker.r = r
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("start reconcile workers: %w", err)
	}
	return nil
}

// Stop lets rounds in flight finish until ctx ends, then cancels them; a
// cancelled round's operation keeps its lease until it runs out.
func (q *Queue) Stop(ctx context.Context) error {
	if err := q.client.Stop(ctx); err != nil {
		if err := q.client.StopAndCancel(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("stop reconcile workers: %w", err)
		}
	}
	return nil
}
