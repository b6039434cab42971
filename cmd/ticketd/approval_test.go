package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApprovalOptions(t *testing.T) {
	t.Parallel()
	base := config{Approval: "on", ApprovalBulkThreshold: "10", PublicURL: "https://tickets.example"}
	opts, err := base.approvalOptions()
	if err != nil || !opts.Policy.Enabled || opts.Policy.BulkThreshold != 10 || opts.Secret != nil ||
		opts.PageURL("a1") != "https://tickets.example/console/approvals/a1" {
		t.Errorf("defaults = %+v, %v; want on, 10, a random key, the page on the public URL", opts.Policy, err)
	}
	off := base
	off.Approval = "off"
	if opts, err := off.approvalOptions(); err != nil || opts.Policy.Enabled {
		t.Errorf("TICKETD_APPROVAL=off = %+v, %v; want off", opts.Policy, err)
	}
	for name, c := range map[string]config{
		"Approval":  {Approval: "yes", ApprovalBulkThreshold: "10"},
		"Threshold": {Approval: "on", ApprovalBulkThreshold: "101"},
		"Secret":    {Approval: "on", ApprovalBulkThreshold: "10", ApprovalSecret: "short"},
	} {
		if _, err := c.approvalOptions(); err == nil || !strings.Contains(err.Error(), "TICKETD_APPROVAL") {
			t.Errorf("%s: %v; want an error naming the variable", name, err)
		}
	}
	// --dev keeps the key across starts, so an ask survives a restart.
	dev := base
	dev.Dev, dev.DataDir = true, t.TempDir()
	first, err := dev.approvalOptions()
	if err != nil {
		t.Fatal(err)
	}
	again, err := dev.approvalOptions()
	if err != nil || string(again.Secret) != string(first.Secret) || len(first.Secret) < minSecret {
		t.Errorf("dev keys %q then %q (%v); want the same kept key", first.Secret, again.Secret, err)
	}
	if _, err := os.Stat(filepath.Join(dev.DataDir, devApprovalSecretFile)); err != nil {
		t.Errorf("dev key file: %v", err)
	}
}
