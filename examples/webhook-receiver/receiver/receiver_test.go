package receiver_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/ticketd/ticketd/examples/webhook-receiver/receiver"
	"github.com/ticketd/ticketd/internal/webhooks"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

const body = `{"type":"ticket.created","timestamp":"2026-11-30T09:00:00Z","data":{"ticket":{"key":"SUP-1"}},"operation_id":"0193a0c2-6b3e-7cc1-9b0e-3f1c2d4e5f60"}`

func open(t *testing.T) (*receiver.Receiver, *[]receiver.Event) {
	t.Helper()
	r, err := receiver.Open(filepath.Join(t.TempDir(), "r.db"), secret)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	var acted []receiver.Event
	r.Act = func(ev receiver.Event) error {
		acted = append(acted, ev)
		return nil
	}
	return r, &acted
}

// post sends body to r as ticketd would, signed at ts with the given
// secret, and returns the status.
func post(t *testing.T, r http.Handler, id string, ts time.Time, signWith string, payload string) int {
	t.Helper()
	sig, err := webhooks.Sign(signWith, id, ts.Unix(), []byte(payload))
	if err != nil {
		t.Fatal(err)
	}
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(payload)))
	req.Header.Set("webhook-id", id)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w.Code
}

func TestAGenuineDeliveryIsActedOnOnce(t *testing.T) {
	t.Parallel()
	r, acted := open(t)
	const id = "0193a0c2-6b3e-7cc1-9b0e-3f1c2d4e5f61"
	if code := post(t, r, id, time.Now(), secret, body); code != http.StatusNoContent {
		t.Fatalf("first delivery: %d, want 204", code)
	}
	if code := post(t, r, id, time.Now(), secret, body); code != http.StatusOK {
		t.Fatalf("redelivery: %d, want 200", code)
	}
	if len(*acted) != 1 {
		t.Fatalf("acted %d times, want 1", len(*acted))
	}
	ev := (*acted)[0]
	if ev.WebhookID != id || ev.Type != "ticket.created" || ev.OperationID != "0193a0c2-6b3e-7cc1-9b0e-3f1c2d4e5f60" {
		t.Errorf("event = %+v", ev)
	}
	if n, dups, err := r.Stats(); err != nil || n != 1 || dups != 1 {
		t.Errorf("stats = %d acted, %d duplicates, %v; want 1, 1", n, dups, err)
	}
}

func TestForgedOrStaleDeliveriesAreRefused(t *testing.T) {
	t.Parallel()
	r, acted := open(t)
	now := time.Now()
	tampered := bytes.Replace([]byte(body), []byte("SUP-1"), []byte("SUP-2"), 1)

	sig, _ := webhooks.Sign(secret, "a", now.Unix(), []byte(body))
	h := http.Header{}
	h.Set("webhook-id", "a")
	h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	h.Set("webhook-signature", sig)
	if _, err := r.Verify(h, tampered); !errors.Is(err, receiver.ErrBadSignature) {
		t.Errorf("tampered body: %v, want ErrBadSignature", err)
	}
	h.Set("webhook-signature", "v1,bm90IGl0 "+sig) // several signatures: one valid is enough
	if _, err := r.Verify(h, []byte(body)); err != nil {
		t.Errorf("valid signature among several: %v", err)
	}

	cases := map[string]struct {
		id, signWith string
		at           time.Time
		payload      string
	}{
		"OldTimestamp":    {"b", secret, now.Add(-6 * time.Minute), body},
		"FutureTimestamp": {"c", secret, now.Add(6 * time.Minute), body},
		"OtherSecret":     {"d", "whsec_c2VjcmV0LW9mLWFub3RoZXItd2ViaG9vaw==", now, body},
	}
	for name, c := range cases {
		if code := post(t, r, c.id, c.at, c.signWith, c.payload); code != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", name, code)
		}
	}
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader([]byte(body)))
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	if w.Code != http.StatusUnauthorized {
		t.Errorf("unsigned: %d, want 401", w.Code)
	}
	if len(*acted) != 0 {
		t.Errorf("acted on %d refused deliveries", len(*acted))
	}
}

func TestAFailedActionIsNotRecordedSoTheRetryActs(t *testing.T) {
	t.Parallel()
	r, acted := open(t)
	fail := true
	act := r.Act
	r.Act = func(ev receiver.Event) error {
		if fail {
			fail = false
			return errors.New("chat service down")
		}
		return act(ev)
	}
	if code := post(t, r, "e", time.Now(), secret, body); code != http.StatusInternalServerError {
		t.Fatalf("failing action: %d, want 500", code)
	}
	if code := post(t, r, "e", time.Now(), secret, body); code != http.StatusNoContent {
		t.Fatalf("retry: %d, want 204", code)
	}
	if len(*acted) != 1 {
		t.Errorf("acted %d times, want 1", len(*acted))
	}
}
