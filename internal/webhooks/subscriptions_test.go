package webhooks_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/dbtest"
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/webhooks"
)

func TestSubscriptionsAreValidatedAndTenantScoped(t *testing.T) {
	t.Parallel()
	dbtest.Dialects(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		opts := fastOptions()
		opts.MaxSubscriptions = 2
		svc := newService(t, d, opts, false)

		sub, secret, err := svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{
			URL: "http://127.0.0.1:9/hooks", Events: []string{"ticket.created", "ticket.created", "comment.created"}, Description: "  chat  ",
		})
		if err != nil {
			t.Fatal(err)
		}
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if !strings.HasPrefix(secret, "whsec_") || err != nil || len(key) != 32 {
			t.Errorf("secret %q is not whsec_ + base64 of 32 bytes", secret)
		}
		if sub.Status != webhooks.SubscriptionActive || sub.Description != "chat" ||
			strings.Join(sub.Events, ",") != "ticket.created,comment.created" {
			t.Errorf("created %+v", sub)
		}

		for name, in := range map[string]webhooks.NewSubscription{
			"NoEvents":        {URL: "http://127.0.0.1:9/"},
			"UnknownEvent":    {URL: "http://127.0.0.1:9/", Events: []string{"ticket.deleted"}},
			"NoURL":           {Events: webhooks.EventTypes},
			"LongDescription": {URL: "http://127.0.0.1:9/", Events: webhooks.EventTypes, Description: strings.Repeat("x", 201)},
			"Metadata":        {URL: "http://169.254.169.254/", Events: webhooks.EventTypes},
		} {
			if _, _, err := svc.CreateSubscription(ctx, tenant, in); !errors.Is(err, webhooks.ErrInvalid) {
				t.Errorf("%s: %v, want ErrInvalid", name, err)
			}
		}

		if _, _, err := svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: "http://127.0.0.1:9/2", Events: webhooks.EventTypes}); err != nil {
			t.Fatal(err)
		}
		_, _, err = svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: "http://127.0.0.1:9/3", Events: webhooks.EventTypes})
		if !errors.Is(err, webhooks.ErrInvalid) || !strings.Contains(err.Error(), "at most 2") {
			t.Errorf("third webhook past the limit: %v", err)
		}
		list, err := svc.ListSubscriptions(ctx, tenant)
		if err != nil || len(list) != 2 || list[0].ID != sub.ID {
			t.Errorf("list = %+v, %v", list, err)
		}

		if _, err := svc.GetSubscription(ctx, "other", sub.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("another tenant reads the webhook: %v", err)
		}
		if err := svc.DeleteSubscription(ctx, "other", sub.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("another tenant deletes the webhook: %v", err)
		}
		if list, _ := svc.ListSubscriptions(ctx, "other"); len(list) != 0 {
			t.Errorf("another tenant lists %+v", list)
		}

		ev := newEvent(webhooks.TypeTicketCreated)
		enqueue(t, d, svc, ev, true)
		if ds, _ := svc.DeliveriesFor(ctx, tenant, ev.OperationID); len(ds) != 2 {
			t.Fatalf("fan-out to 2 webhooks: %+v", ds)
		}
		update := newEvent(webhooks.TypeTicketUpdated)
		enqueue(t, d, svc, update, true)
		if ds, _ := svc.DeliveriesFor(ctx, tenant, update.OperationID); len(ds) != 1 {
			t.Errorf("ticket.updated goes only to the webhook asking for it: %+v", ds)
		}

		if err := svc.DeleteSubscription(ctx, tenant, sub.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.GetSubscription(ctx, tenant, sub.ID); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("after delete: %v", err)
		}
		if _, err := svc.Deliveries(ctx, tenant, sub.ID, 0); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("deliveries of a deleted webhook: %v", err)
		}
		if ds, _ := svc.DeliveriesFor(ctx, tenant, ev.OperationID); len(ds) != 1 {
			t.Errorf("deliveries of the deleted webhook remain: %+v", ds)
		}
		if _, err := svc.Retry(ctx, tenant, sub.ID, uuid.Must(uuid.NewV7())); !errors.Is(err, webhooks.ErrNotFound) {
			t.Errorf("retry on a deleted webhook: %v", err)
		}
	})
}

// resolver is a DNS table a test can change between registration and
// delivery.
type resolver struct {
	mu   sync.Mutex
	addr netip.Addr
}

func (r *resolver) set(a string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addr = netip.MustParseAddr(a)
}

func (r *resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if host != "hooks.example.com" {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []netip.Addr{r.addr}, nil
}

func TestSSRFRefusedAtRegistrationAndAtConnectTime(t *testing.T) {
	t.Parallel()
	d := dbtest.SQLite(t)
	ctx := context.Background()
	dns := &resolver{}
	opts := fastOptions()
	opts.AllowPrivate = false
	opts.Resolver = dns
	opts.MaxAttempts = 2
	svc := newService(t, d, opts, true)

	for _, raw := range []string{
		"http://hooks.example.com/", "https://127.0.0.1/", "https://10.0.0.1/", "https://[fe80::1]/",
		"https://169.254.169.254/", "https://[fd00:ec2::254]/", "https://100.64.1.1/",
		// IPv6 forms that embed an internal IPv4 address (docs/contract.md#fair-share).
		"https://[64:ff9b::a9fe:a9fe]/", "https://[64:ff9b::a00:1]/", "https://[::127.0.0.1]/",
		"https://[2002:a9fe:a9fe::]/", "https://[::ffff:0:7f00:1]/", "https://[64:ff9b:1::a00:1]/",
		"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "https://[fec0::1]/",
	} {
		dns.set("93.184.215.14")
		if _, _, err := svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: raw, Events: webhooks.EventTypes}); !errors.Is(err, ssrf.ErrRefused) {
			t.Errorf("register %s: %v, want refused", raw, err)
		}
	}
	for _, private := range []string{"10.0.0.5", "127.0.0.1", "169.254.169.254", "64:ff9b::a00:5"} {
		dns.set(private)
		_, _, err := svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: "https://hooks.example.com/", Events: webhooks.EventTypes})
		if !errors.Is(err, webhooks.ErrInvalid) || !errors.Is(err, ssrf.ErrRefused) {
			t.Errorf("register a name resolving to %s: %v, want refused", private, err)
		}
		if err != nil && (strings.Contains(err.Error(), private) || strings.Contains(err.Error(), "10.0.0.5")) {
			t.Errorf("register a name resolving to %s: %v names the address", private, err)
		}
	}

	// Registered while the name is public; it then moves to loopback.
	dns.set("93.184.215.14")
	if _, _, err := svc.CreateSubscription(ctx, tenant, webhooks.NewSubscription{URL: "https://hooks.example.com/", Events: webhooks.EventTypes}); err != nil {
		t.Fatalf("register a public name: %v", err)
	}
	dns.set("64:ff9b::7f00:1") // DNS64's answer for an internal name
	ev := newEvent(webhooks.TypeTicketCreated)
	enqueue(t, d, svc, ev, true)
	got := waitStatus(t, svc, ev.OperationID, webhooks.StatusFailed)
	if got.Attempts != 2 || !strings.Contains(got.LastError, "not sent") || !strings.Contains(got.LastError, "refused") ||
		strings.Contains(got.LastError, "7f00") || strings.Contains(got.LastError, "127.0.0.1") {
		t.Errorf("delivery to a rebound name = %+v, want failed, never sent, refused, naming no address", got)
	}
}
