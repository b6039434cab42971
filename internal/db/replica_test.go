package db

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

func TestParseLSN(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want uint64
	}{
		{"0/0", 0},
		{"0/30000D8", 0x30000D8},
		{"16/B374D848", 0x16<<32 | 0xB374D848},
		{"FFFFFFFF/FFFFFFFF", 1<<64 - 1},
	} {
		got, err := parseLSN(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseLSN(%q) = %#x, %v; want %#x", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "30000D8", "0/", "x/1", "1/100000000"} {
		if _, err := parseLSN(bad); err == nil {
			t.Errorf("parseLSN(%q) succeeded, want an error", bad)
		}
	}
}

// A read replica is a PostgreSQL standby: SQLite has none, so asking for one
// fails before anything connects.
func TestAttachReplicaNeedsPostgres(t *testing.T) {
	t.Parallel()
	d, err := Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.AttachReplica(context.Background(), "postgres://127.0.0.1:1/x"); !errors.Is(err, ErrReplicaNotPostgres) {
		t.Fatalf("AttachReplica on SQLite: %v, want ErrReplicaNotPostgres", err)
	}
	if d.Replica != nil {
		t.Fatal("a failed AttachReplica left a replica attached")
	}
}
