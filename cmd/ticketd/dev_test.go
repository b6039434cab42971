package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDevSecretIsCreatedOnceAndKeptPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".ticketd")
	first, path, err := devSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != 64 {
		t.Fatalf("secret is %d bytes, want 64 hex characters", len(first))
	}
	again, _, err := devSecret(dir)
	if err != nil || string(again) != string(first) {
		t.Fatalf("second devSecret = %q, %v; want the same secret", again, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("data dir holds %v (%v), want only %s: no temporary files left", entries, err, devSecretFile)
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := devSecret(dir); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("devSecret with a world-readable file = %v, want a refusal saying chmod 600", err)
	}
	if err := os.WriteFile(path, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := devSecret(dir); err == nil || !strings.Contains(err.Error(), "delete it") {
		t.Fatalf("devSecret with a truncated file = %v, want a refusal saying to delete it", err)
	}
}
