package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivertype"
)

// rescuer hands back to the queue the delivery jobs a dead replica held:
// River marks a job running when a worker fetches it, and only its own
// rescuer, which runs on the elected leader every 30 s (not configurable in
// River v0.51), ever makes it available again; a replica killed mid-attempt
// left its deliveries waiting up to RescueAfter plus 30 s plus a leader
// election. This sweep runs on every replica, every few seconds, with River's
// own driver queries (the ones its rescuer uses), so a dead replica's
// deliveries are retried about RescueAfter after their attempt began.
//
// Rescuing a job whose worker is alive but slow is harmless: the delivery's
// lease (claim) keeps two workers from sending the same attempt at once, and
// a delivery already finished makes the rescued job a no-op.
type rescuer struct {
	exec     riverdriver.Executor
	after    time.Duration
	interval time.Duration
	logger   *slog.Logger

	stop chan struct{}
	done sync.WaitGroup
}

// rescuedNote is the error a rescued job carries for its lost attempt.
const rescuedNote = "rescued: the worker holding it stopped answering"

// rescued says whether job was last handed back by a rescue sweep: it
// was queued before whatever backlog its subscription has now.
func rescued(job *river.Job[deliveryArgs]) bool {
	return len(job.Errors) > 0 && job.Errors[len(job.Errors)-1].Error == rescuedNote
}

func newRescuer(exec riverdriver.Executor, after time.Duration, logger *slog.Logger) *rescuer {
	return &rescuer{
		exec: exec, after: after, logger: logger,
		// A fraction of RescueAfter, so a job waits at most about a
		// quarter longer than asked; never a busy loop.
		interval: min(max(after/8, 500*time.Millisecond), 5*time.Second),
	}
}

func (r *rescuer) start() {
	r.stop = make(chan struct{})
	r.done.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-r.stop
			cancel()
		}()
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if n, err := r.sweep(ctx); err != nil && ctx.Err() == nil {
				r.logger.Warn("webhook rescue sweep failed", "error", err)
			} else if n > 0 {
				r.logger.Info("webhook deliveries rescued from a worker that stopped answering", "jobs", n)
			}
		}
	})
}

func (r *rescuer) close() {
	if r.stop != nil {
		close(r.stop)
		r.done.Wait()
		r.stop = nil
	}
}

// sweep makes every delivery job running since before the horizon
// retryable at once, in its place in the queue, and reports how many it
// rescued.
func (r *rescuer) sweep(ctx context.Context) (int, error) {
	horizon := time.Now().Add(-r.after)
	stuck, err := r.exec.JobGetStuck(ctx, &riverdriver.JobGetStuckParams{Max: 100, StuckHorizon: horizon})
	if err != nil {
		return 0, fmt.Errorf("find stuck webhook jobs: %w", err)
	}
	now := time.Now().UTC()
	p := riverdriver.JobRescueManyParams{StuckHorizon: horizon}
	for _, job := range stuck {
		if job.Kind != (deliveryArgs{}).Kind() {
			continue
		}
		e, err := json.Marshal(rivertype.AttemptError{At: now, Attempt: max(job.Attempt, 0), Error: rescuedNote})
		if err != nil {
			return 0, fmt.Errorf("encode rescue note: %w", err)
		}
		p.ID = append(p.ID, job.ID)
		p.Error = append(p.Error, e)
		p.FinalizedAt = append(p.FinalizedAt, nil)
		// Its place in the queue is where it stood when it ran: the queue
		// is taken in scheduled order, and now would put it behind every
		// delivery queued since, its subscription's backlog included.
		p.ScheduledAt = append(p.ScheduledAt, job.ScheduledAt)
		p.State = append(p.State, string(rivertype.JobStateRetryable))
	}
	if len(p.ID) == 0 {
		return 0, nil
	}
	if _, err := r.exec.JobRescueMany(ctx, &p); err != nil {
		return 0, fmt.Errorf("rescue webhook jobs: %w", err)
	}
	return len(p.ID), nil
}
