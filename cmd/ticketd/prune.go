package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/operations"
)

// prune deletes succeeded operation records older than the retention
// window, in batches, and prints how many went. Each leaves a tombstone, so
// its ID still answers (expired) and is never run again. Records that still
// need an answer or an operator (pending, failed, unknown) are never deleted.
func prune(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("prune", flag.ContinueOnError)
	olderThan := fs.Duration("older-than", operations.DefaultRetention,
		"delete succeeded operation records last updated longer ago than this, keeping a tombstone of each; a lookup of a pruned ID answers expired and a retry is refused (operation_expired) instead of replayed, so keep it at least the "+
			days(operations.DefaultRetention)+" ticketd promises agents")
	dryRun := fs.Bool("dry-run", false, "count the records that would be deleted, delete nothing")
	batchSize := fs.Int("batch-size", operations.DefaultPruneBatch, "records deleted per statement (each a short transaction)")
	cfg, err := parseConfig(fs, groupDB|groupDev, args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case *olderThan <= 0:
		return fmt.Errorf("prune: --older-than must be positive, got %s", *olderThan)
	case *batchSize <= 0:
		return fmt.Errorf("prune: --batch-size must be positive, got %d", *batchSize)
	}
	if *olderThan < operations.DefaultRetention {
		fmt.Fprintf(stderr, "ticketd: prune: warning: --older-than %s is shorter than the %s retention ticketd promises agents; a retry of a pruned operation ID is then refused with operation_expired, never applied twice, but its result can no longer be replayed\n",
			*olderThan, days(operations.DefaultRetention))
	}
	store, err := openDB(ctx, cfg)
	if err != nil {
		return err
	}
	defer store.Close()

	cutoff := time.Now().Add(-*olderThan).UTC().Truncate(time.Second)
	ledger := operations.NewLedger(store.Gorm, operations.Options{})
	res, err := ledger.Prune(ctx, cutoff, *batchSize, *dryRun)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	if *dryRun {
		_, err = fmt.Fprintf(stdout, "would delete %d succeeded operation records last updated before %s (dry run: nothing deleted)\n",
			res.Eligible, cutoff.Format(time.RFC3339))
		return err
	}
	batches := "batches"
	if res.Batches == 1 {
		batches = "batch"
	}
	if _, err := fmt.Fprintf(stdout, "deleted %d succeeded operation records last updated before %s in %d %s, keeping a tombstone of each\n",
		res.Deleted, cutoff.Format(time.RFC3339), res.Batches, batches); err != nil {
		return err
	}
	// Approvals nobody answered or used in time are expired, so the console
	// stops listing them and a late answer asks again (docs/contract.md#approval).
	expired, err := approval.New(store.Gorm, approval.Options{}).Expire(ctx)
	if err != nil {
		return fmt.Errorf("prune: %w", err)
	}
	_, err = fmt.Fprintf(stdout, "expired %d approvals past their expiry\n", expired)
	return err
}
