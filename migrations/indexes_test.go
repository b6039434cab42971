package migrations_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
)

// TestNoIndexRepeatsAnother: no two indexes of ticketd's tables hold the
// same columns under the same predicate, in either order: a B-tree is read
// backward as readily as forward, so the second only makes every write of a
// row write its key twice (tickets_tenant_id_desc beside tickets_pkey,
// dropped by 00018; docs/perf.md).
func TestNoIndexRepeatsAnother(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		seen := map[string]string{} // an index's definition, its direction and name left out → its name
		defs := indexDefinitions(t, d)
		if len(defs) < 10 {
			t.Fatalf("found %d indexes; the catalogue query is broken", len(defs))
		}
		for name, def := range defs {
			held := withoutDirection(def)
			if other, ok := seen[held]; ok {
				t.Errorf("indexes %s and %s hold the same keys: %s", other, name, held)
			}
			seen[held] = name
		}
	})
}

// direction is what orders an index's column, which a backward read undoes.
var direction = regexp.MustCompile(`(?i)\s+(ASC|DESC)(\s+NULLS\s+(FIRST|LAST))?\b`)

// withoutDirection is an index's definition from its table on, lower-cased,
// its whitespace collapsed and its columns' directions removed.
func withoutDirection(def string) string {
	def = " " + strings.Join(strings.Fields(strings.ToLower(def)), " ")
	if _, on, ok := strings.Cut(def, " on "); ok {
		def = on
	}
	return direction.ReplaceAllString(def, "")
}

// indexDefinitions maps every index of ticketd's tables (River's and
// goose's left out) to its CREATE INDEX statement, or, for an index SQLite
// made for a constraint, to "table (columns)".
func indexDefinitions(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	defs := map[string]string{}
	if d.Dialect == db.Postgres {
		var rows []struct{ Tbl, Name, Def string }
		err := d.Gorm.Raw(`SELECT tablename AS tbl, indexname AS name, indexdef AS def FROM pg_indexes
			WHERE schemaname = current_schema()`).Scan(&rows).Error
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if !keptApart(r.Tbl) {
				defs[r.Name] = r.Def
			}
		}
		return defs
	}
	var rows []struct{ Tbl, Name, SQL string }
	err := d.Gorm.Raw(`SELECT tbl_name AS tbl, name, COALESCE(sql, '') AS sql FROM sqlite_master WHERE type = 'index'`).Scan(&rows).Error
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if keptApart(r.Tbl) {
			continue
		}
		if r.SQL == "" {
			var cols []string
			if err := d.Gorm.Raw("SELECT COALESCE(name, '(expression)') FROM pragma_index_info(?) ORDER BY seqno", r.Name).Scan(&cols).Error; err != nil {
				t.Fatal(err)
			}
			r.SQL = "ON " + r.Tbl + " (" + strings.Join(cols, ", ") + ")"
		}
		defs[r.Name] = r.SQL
	}
	return defs
}

// The definitions compare as a backward read sees them: direction is no
// difference, a predicate, a column or a method is.
func TestWithoutDirection(t *testing.T) {
	t.Parallel()
	same := [][2]string{
		{"CREATE UNIQUE INDEX tickets_pkey ON public.tickets USING btree (tenant_id, id)",
			"CREATE INDEX tickets_tenant_id_desc ON public.tickets USING btree (tenant_id, id DESC)"},
		{"CREATE INDEX a ON t (x DESC NULLS LAST, y)", "ON t (x, y ASC)"},
	}
	for _, c := range same {
		if withoutDirection(c[0]) != withoutDirection(c[1]) {
			t.Errorf("%q and %q differ: %q, %q", c[0], c[1], withoutDirection(c[0]), withoutDirection(c[1]))
		}
	}
	differ := [][2]string{
		{"CREATE INDEX a ON t (tenant_id, id DESC)", "CREATE INDEX b ON t (tenant_id, id DESC) WHERE assignee IS NULL"},
		{"CREATE INDEX a ON t (tenant_id, id)", "CREATE INDEX b ON t (id, tenant_id)"},
		{"CREATE INDEX a ON t USING btree (descr)", "CREATE INDEX b ON t USING gin (descr)"},
		{"CREATE INDEX a ON t (description)", "CREATE INDEX b ON t (describe)"},
	}
	for _, c := range differ {
		if withoutDirection(c[0]) == withoutDirection(c[1]) {
			t.Errorf("%q and %q compare the same: %q", c[0], c[1], withoutDirection(c[0]))
		}
	}
}
