package observe_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/observe"
)

// The Grafana dashboard queries only metrics this package exposes, so a
// renamed metric breaks this test rather than an operator's panel.
func TestDashboardQueriesOnlyExposedMetrics(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../deploy/grafana/ticketd-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dashboard struct {
		Panels []struct {
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dashboard); err != nil {
		t.Fatalf("dashboard is not valid JSON: %v", err)
	}

	m := observe.New(observe.Options{Actions: []string{"create_ticket"}})
	sqlDB, err := dbtest.SQLite(t).Gorm.DB()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.CollectDB(sqlDB); err != nil {
		t.Fatal(err)
	}
	if err := m.CollectOutboxPending(func(context.Context) (int64, error) { return 0, nil }); err != nil {
		t.Fatal(err)
	}
	m.Request(observe.REST, "/api/v1/tickets", "200", time.Millisecond)
	exposed := scrape(t, m)

	name := regexp.MustCompile(`\b(ticketd|go_sql)_[a-z_]+`)
	queried := 0
	for _, p := range dashboard.Panels {
		for _, target := range p.Targets {
			for _, metric := range name.FindAllString(target.Expr, -1) {
				queried++
				family := strings.TrimSuffix(metric, "_bucket")
				if _, ok := exposed[family]; !ok {
					t.Errorf("dashboard queries %s, which /metrics does not expose", metric)
				}
			}
		}
	}
	if queried == 0 {
		t.Error("the dashboard queries no ticketd metric")
	}
}
