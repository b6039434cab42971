package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/approval"
)

func TestApprovalOptions(t *testing.T) {
	t.Parallel()
	base := config{Approval: "on", ApprovalBulkThreshold: "10", ApprovalChannels: "form,url", ApprovalFourEyes: "off",
		ApprovalTTL: 5 * time.Minute, PublicURL: "https://tickets.example"}
	opts, err := base.approvalOptions()
	if err != nil || !opts.Policy.Enabled || opts.Policy.BulkThreshold != 10 || opts.Secret != nil || opts.Channels != nil ||
		opts.FourEyes || opts.TTL != 5*time.Minute || opts.PageURL("a1") != "https://tickets.example/console/approvals/a1" {
		t.Errorf("defaults = %+v, %v; want on, 10, form and url, no four-eyes, 5m, a random key, the page on the public URL", opts, err)
	}
	strict := base
	strict.ApprovalChannels, strict.ApprovalFourEyes, strict.ApprovalTTL = "url", "on", time.Minute
	if opts, err := strict.approvalOptions(); err != nil || !slices.Equal(opts.Channels, []approval.Mode{approval.ModeURL}) ||
		!opts.FourEyes || opts.TTL != time.Minute {
		t.Errorf("channels url, four-eyes on, TTL 1m = %+v, %v", opts, err)
	}
	off := base
	off.Approval = "off"
	if opts, err := off.approvalOptions(); err != nil || opts.Policy.Enabled {
		t.Errorf("TICKETD_APPROVAL=off = %+v, %v; want off", opts.Policy, err)
	}
	for name, c := range map[string]config{
		"Approval":  {Approval: "yes", ApprovalBulkThreshold: "10", ApprovalChannels: "form,url", ApprovalFourEyes: "off"},
		"Threshold": {Approval: "on", ApprovalBulkThreshold: "101", ApprovalChannels: "form,url", ApprovalFourEyes: "off"},
		"Channels":  {Approval: "on", ApprovalBulkThreshold: "10", ApprovalChannels: "form", ApprovalFourEyes: "off"},
		"FourEyes":  {Approval: "on", ApprovalBulkThreshold: "10", ApprovalChannels: "form,url", ApprovalFourEyes: "yes"},
		"Secret":    {Approval: "on", ApprovalBulkThreshold: "10", ApprovalChannels: "form,url", ApprovalFourEyes: "off", ApprovalSecret: "short"},
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
