package migrations_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/webhooks"
)

// key is one primary key, unique constraint or unique index.
type key struct {
	table, name string
	columns     []string
}

// foreignKey is one foreign key: its columns and the ones it references.
type foreignKey struct {
	table, references string
	columns, targets  []string
}

// keptApart reports the tables that are not ticketd's tenant data: goose's
// version table and River's job queue (river_*), which docs/scale.md keeps
// apart from the tenant tables (docs/scale.md: on Citus they stay on the
// coordinator, undistributed).
func keptApart(table string) bool {
	return table == "goose_db_version" || strings.HasPrefix(table, "river_")
}

// TestKeysLeadWithTenant is write scaling checked (docs/scale.md): on
// PostgreSQL, every primary key, unique constraint and unique index of
// ticketd's tables leads with tenant_id, and every foreign key between them
// carries tenant_id on both sides, so the tables can be distributed and
// co-located by tenant_id. River's tables carry no tenant_id and no foreign
// key joins them to ticketd's. SQLite never shards; there an id-only key is
// accepted only beside its tenant-led twin (migrations/sqlite/00008).
func TestKeysLeadWithTenant(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		if err := webhooks.Migrate(ctx, d); err != nil {
			t.Fatal(err)
		}
		keys, fks, river := schemaKeys(t, d)
		if len(keys) == 0 || len(river) == 0 {
			t.Fatalf("found %d keys and %d River tables; the catalogue query is broken", len(keys), len(river))
		}
		tenantLed := map[string]bool{} // table + columns of every tenant-led key
		for _, k := range keys {
			if len(k.columns) > 0 && k.columns[0] == "tenant_id" {
				tenantLed[k.table+"("+strings.Join(k.columns, ",")+")"] = true
			}
		}
		for _, k := range keys {
			if len(k.columns) > 0 && k.columns[0] == "tenant_id" {
				continue
			}
			twin := k.table + "(" + strings.Join(append([]string{"tenant_id"}, k.columns...), ",") + ")"
			if d.Dialect == db.SQLite && tenantLed[twin] {
				continue
			}
			t.Errorf("%s: key %s on (%s) does not lead with tenant_id", k.table, k.name, strings.Join(k.columns, ", "))
		}
		for _, fk := range fks {
			switch {
			case keptApart(fk.table) != keptApart(fk.references):
				t.Errorf("foreign key %s(%s) → %s joins River's tables to ticketd's", fk.table, strings.Join(fk.columns, ", "), fk.references)
			case keptApart(fk.table):
			case d.Dialect == db.Postgres && (fk.columns[0] != "tenant_id" || fk.targets[0] != "tenant_id"):
				t.Errorf("foreign key %s(%s) → %s(%s) does not lead with tenant_id on both sides",
					fk.table, strings.Join(fk.columns, ", "), fk.references, strings.Join(fk.targets, ", "))
			}
		}
		for table, columns := range river {
			if slices.Contains(columns, "tenant_id") {
				t.Errorf("River's table %s has a tenant_id column: tenant data belongs in ticketd's tables", table)
			}
		}
	})
}

// schemaKeys lists the unique keys and foreign keys of ticketd's tables and
// the columns of River's.
func schemaKeys(t *testing.T, d *db.DB) ([]key, []foreignKey, map[string][]string) {
	t.Helper()
	g := d.Gorm
	var keys []key
	var fks []foreignKey
	river := map[string][]string{}
	if d.Dialect == db.Postgres {
		var rows []struct {
			Tbl, Name, Cols string
		}
		err := g.Raw(`SELECT c.relname AS tbl, ic.relname AS name,
				(SELECT string_agg(COALESCE(a.attname, '(expression)'), ',' ORDER BY k.n)
				 FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)
				 LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum) AS cols
			FROM pg_index i
			JOIN pg_class c ON c.oid = i.indrelid
			JOIN pg_class ic ON ic.oid = i.indexrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE i.indisunique AND n.nspname = current_schema()`).Scan(&rows).Error
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if !keptApart(r.Tbl) {
				keys = append(keys, key{r.Tbl, r.Name, strings.Split(r.Cols, ",")})
			}
		}
		var frows []struct {
			Tbl, Ref, Cols, Targets string
		}
		err = g.Raw(`SELECT c.relname AS tbl, r.relname AS ref,
				(SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(f.conkey) WITH ORDINALITY AS k(attnum, n)
				 JOIN pg_attribute a ON a.attrelid = f.conrelid AND a.attnum = k.attnum) AS cols,
				(SELECT string_agg(a.attname, ',' ORDER BY k.n) FROM unnest(f.confkey) WITH ORDINALITY AS k(attnum, n)
				 JOIN pg_attribute a ON a.attrelid = f.confrelid AND a.attnum = k.attnum) AS targets
			FROM pg_constraint f
			JOIN pg_class c ON c.oid = f.conrelid
			JOIN pg_class r ON r.oid = f.confrelid
			JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE f.contype = 'f' AND n.nspname = current_schema()`).Scan(&frows).Error
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range frows {
			fks = append(fks, foreignKey{r.Tbl, r.Ref, strings.Split(r.Cols, ","), strings.Split(r.Targets, ",")})
		}
		var cols []struct{ Tbl, Col string }
		if err := g.Raw(`SELECT table_name AS tbl, column_name AS col FROM information_schema.columns
			WHERE table_schema = current_schema() AND table_name LIKE 'river\_%'`).Scan(&cols).Error; err != nil {
			t.Fatal(err)
		}
		for _, c := range cols {
			river[c.Tbl] = append(river[c.Tbl], c.Col)
		}
		return keys, fks, river
	}

	var tables []struct{ Name, SQL string }
	if err := g.Raw(`SELECT name, COALESCE(sql, '') AS sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\'`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	var virtual []string
	for _, tb := range tables {
		if strings.HasPrefix(strings.ToUpper(tb.SQL), "CREATE VIRTUAL TABLE") {
			virtual = append(virtual, tb.Name)
		}
	}
	for _, tb := range tables {
		// A full-text index and its shadow tables are keyed by rowid.
		if slices.ContainsFunc(virtual, func(v string) bool { return tb.Name == v || strings.HasPrefix(tb.Name, v+"_") }) {
			continue
		}
		if strings.HasPrefix(tb.Name, "river_") {
			var cols []struct{ Name string }
			if err := g.Raw("SELECT name FROM pragma_table_info(?)", tb.Name).Scan(&cols).Error; err != nil {
				t.Fatal(err)
			}
			for _, c := range cols {
				river[tb.Name] = append(river[tb.Name], c.Name)
			}
		}
		var fkRows []struct {
			ID              int
			Table, From, To string
		}
		if err := g.Raw(`SELECT id, "table", "from", "to" FROM pragma_foreign_key_list(?) ORDER BY id, seq`, tb.Name).Scan(&fkRows).Error; err != nil {
			t.Fatal(err)
		}
		byID := map[int]*foreignKey{}
		for _, r := range fkRows {
			fk := byID[r.ID]
			if fk == nil {
				fk = &foreignKey{table: tb.Name, references: r.Table}
				byID[r.ID] = fk
			}
			fk.columns, fk.targets = append(fk.columns, r.From), append(fk.targets, r.To)
		}
		for _, fk := range byID {
			fks = append(fks, *fk)
		}
		if keptApart(tb.Name) {
			continue
		}
		var indexes []struct {
			Name   string
			Unique int
		}
		if err := g.Raw(`SELECT name, "unique" FROM pragma_index_list(?)`, tb.Name).Scan(&indexes).Error; err != nil {
			t.Fatal(err)
		}
		for _, ix := range indexes {
			if ix.Unique == 0 {
				continue
			}
			var cols []struct{ Name string }
			if err := g.Raw("SELECT COALESCE(name, '(expression)') AS name FROM pragma_index_info(?) ORDER BY seqno", ix.Name).Scan(&cols).Error; err != nil {
				t.Fatal(err)
			}
			k := key{table: tb.Name, name: ix.Name}
			for _, c := range cols {
				k.columns = append(k.columns, c.Name)
			}
			keys = append(keys, k)
		}
	}
	return keys, fks, river
}

// joinOn finds a SQL JOIN and its ON condition in a string literal.
var joinOn = regexp.MustCompile(`(?is)\bJOIN\b\s+\S+(?:\s+(?:AS\s+)?\w+)?\s+ON\b(.*?)(?:\bJOIN\b|\bWHERE\b|\bGROUP\b|\bORDER\b|\bLIMIT\b|$)`)

// TestNoCrossTenantJoins reads every SQL string in ticketd's non-test Go
// source: a JOIN must match tenant_id in its ON condition, so no query ever
// combines two tenants' rows and each runs on one tenant's shard.
func TestNoCrossTenantJoins(t *testing.T) {
	t.Parallel()
	// The matcher itself: it must tell a join across tenants from one within.
	if m := joinOn.FindStringSubmatch("SELECT * FROM a JOIN b ON a.id = b.id WHERE a.x = 1"); m == nil || strings.Contains(m[1], "tenant_id") {
		t.Fatalf("joinOn does not catch a join on id alone: %q", m)
	}
	if m := joinOn.FindStringSubmatch("SELECT * FROM a JOIN b AS bb ON a.tenant_id = bb.tenant_id AND a.id = bb.id"); m == nil || !strings.Contains(m[1], "tenant_id") {
		t.Fatalf("joinOn does not read a join's ON condition: %q", m)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, root := range []string{"../internal", "../cmd"} {
		err := filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(path, "test"+string(filepath.Separator)) {
				return err
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(lit.Value)
				if err != nil {
					return true
				}
				for _, m := range joinOn.FindAllStringSubmatch(s, -1) {
					checked++
					if !strings.Contains(m[1], "tenant_id") {
						t.Errorf("%s: a JOIN whose ON condition does not match tenant_id: %q", fset.Position(lit.Pos()), m[0])
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("SQL JOINs in ticketd's source: %d, every one within a tenant", checked)
}
