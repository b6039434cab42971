package webhooks_test

import (
	"context"
	"sync"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestReplicasMigratingTogetherBothSucceed(t *testing.T) {
	t.Parallel()
	url := dbtest.PostgresURL(t)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		d, err := db.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		wg.Go(func() { errs[i] = webhooks.Migrate(context.Background(), d) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
}

func TestMigrateTwiceIsANoOp(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		for range 2 {
			if err := webhooks.Migrate(context.Background(), d); err != nil {
				t.Fatal(err)
			}
		}
	})
}
