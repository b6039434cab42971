package main

import (
	"fmt"
	"strconv"

	"github.com/ticketd/ticketd/internal/approval"
)

// approvalOptions parses and checks the approval settings (docs/contract.md#approval). The
// approval page's URL is absolute, on the public URL, because an agent's
// client or a person opens it from elsewhere.
func (c *config) approvalOptions() (approval.Options, error) {
	opts, err := c.approvalPolicy()
	if err != nil {
		return opts, err
	}
	if opts.Secret == nil && c.Dev {
		secret, _, err := devKey(c.DataDir, devApprovalSecretFile)
		if err != nil {
			return opts, fmt.Errorf("approval secret: %w", err)
		}
		opts.Secret = secret
	}
	base := c.PublicURL
	opts.PageURL = func(id string) string { return base + "/console/approvals/" + id }
	return opts, nil
}

// approvalPolicy is the part of approvalOptions that touches nothing, so
// validate checks it before anything is opened: the policy, the channels,
// four-eyes, the TTL and a configured secret.
func (c *config) approvalPolicy() (approval.Options, error) {
	var opts approval.Options
	switch c.Approval {
	case "on":
		opts.Policy.Enabled = true
	case "off":
	default:
		return opts, fmt.Errorf("TICKETD_APPROVAL=%q: want on or off", c.Approval)
	}
	n, err := strconv.Atoi(c.ApprovalBulkThreshold)
	if err != nil || n < 1 || n > 100 {
		return opts, fmt.Errorf("TICKETD_APPROVAL_BULK_THRESHOLD=%q: want a whole number from 1 to 100 (a bulk update names at most 100 tickets)", c.ApprovalBulkThreshold)
	}
	opts.Policy.BulkThreshold = n
	switch c.ApprovalChannels {
	case "form,url":
	case "url":
		opts.Channels = []approval.Mode{approval.ModeURL}
	default:
		return opts, fmt.Errorf("TICKETD_APPROVAL_CHANNELS=%q: want form,url or url", c.ApprovalChannels)
	}
	switch c.ApprovalFourEyes {
	case "on":
		opts.FourEyes = true
	case "off":
	default:
		return opts, fmt.Errorf("TICKETD_APPROVAL_FOUR_EYES=%q: want on or off", c.ApprovalFourEyes)
	}
	opts.TTL = c.ApprovalTTL
	if c.ApprovalSecret != "" {
		if err := checkSecret("TICKETD_APPROVAL_SECRET", c.ApprovalSecret); err != nil {
			return opts, err
		}
		opts.Secret = []byte(c.ApprovalSecret)
	}
	return opts, nil
}
