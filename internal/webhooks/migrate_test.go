package webhooks_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"

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

// TestMigrateCatchesUpAnOlderQueueSchema rolls River's schema back one
// version after a full migration: the next Migrate must see that it is
// behind (its fast check reads the newest applied version) and bring it
// back, not take it for current.
func TestMigrateCatchesUpAnOlderQueueSchema(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if err := webhooks.Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		sqlDB, err := d.Gorm.DB()
		if err != nil {
			t.Fatal(err)
		}
		var driver riverdriver.Driver[*sql.Tx] = riverdatabasesql.New(sqlDB)
		if d.Dialect == db.SQLite {
			driver = riversqlite.New(sqlDB)
		}
		m, err := rivermigrate.New(driver, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Migrate(ctx, rivermigrate.DirectionDown, &rivermigrate.MigrateOpts{MaxSteps: 1}); err != nil {
			t.Fatalf("roll back one version: %v", err)
		}
		if v, err := m.Validate(ctx, nil); err != nil || v.OK {
			t.Fatalf("after the rollback Validate = %+v, %v; want a version pending", v, err)
		}
		if err := webhooks.Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		if v, err := m.Validate(ctx, nil); err != nil || !v.OK {
			t.Errorf("after Migrate Validate = %+v, %v; want every version applied", v, err)
		}
	})
}
