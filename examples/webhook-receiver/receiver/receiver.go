// Package receiver is the receiving half of ticketd's webhook contract, as
// a reference for people building on ticketd: it checks a delivery's
// Standard Webhooks signature and timestamp, and acts on each webhook-id
// once, however many times ticketd sends it (ticketd delivers at least
// once, so a retry after a lost answer brings the same webhook-id again).
//
// It depends only on the standard library and a SQLite driver, so it can be
// copied out of this repository.
package receiver

import (
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	_ "github.com/glebarez/go-sqlite" // database/sql driver "sqlite", pure Go
)

// Tolerance is how far a delivery's webhook-timestamp may be from now: an
// old, captured request replayed later is refused.
const Tolerance = 5 * time.Minute

// maxBody bounds a delivery's body.
const maxBody = 1 << 20

// Errors for a request that is not a genuine, fresh delivery.
var (
	ErrMissingHeaders = errors.New("missing webhook-id, webhook-timestamp or webhook-signature")
	ErrBadTimestamp   = errors.New("webhook-timestamp outside the tolerance window")
	ErrBadSignature   = errors.New("no valid signature")
)

// Event is a verified delivery.
type Event struct {
	WebhookID   string          // the idempotency key
	Type        string          `json:"type"`
	Timestamp   string          `json:"timestamp"`
	OperationID string          `json:"operation_id"`
	Data        json.RawMessage `json:"data"`
}

// Receiver verifies deliveries and records each webhook-id in its own
// SQLite table, acting on it the first time only.
type Receiver struct {
	db  *sql.DB
	key []byte
	// Act is called once per webhook-id, inside the transaction that
	// records it: if Act fails, nothing is recorded and the receiver answers
	// 500, so ticketd retries.
	Act func(Event) error
	// Now is the clock for the timestamp window; nil means time.Now.
	Now func() time.Time
}

// Open opens (creating if needed) the dedupe database at path and returns a
// receiver for the webhook whose secret ("whsec_…") is given.
func Open(path, secret string) (*Receiver, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("the secret must be whsec_ followed by base64, as ticketd showed it at registration")
	}
	dsn := "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS received (
		webhook_id  text    PRIMARY KEY,
		type        text    NOT NULL,
		body        text    NOT NULL,
		received_at text    NOT NULL,
		duplicates  integer NOT NULL DEFAULT 0
	)`)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("create table in %s: %w", path, err)
	}
	return &Receiver{db: db, key: key, Act: func(Event) error { return nil }}, nil
}

// Close closes the database.
func (r *Receiver) Close() error { return r.db.Close() }

// Verify checks a delivery's headers against its body and returns the
// event. Errors: ErrMissingHeaders, ErrBadTimestamp, ErrBadSignature, or a
// body that is not the expected JSON.
func (r *Receiver) Verify(h http.Header, body []byte) (Event, error) {
	id, tsText, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || tsText == "" || sigs == "" {
		return Event{}, ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil {
		return Event{}, fmt.Errorf("%w: %q is not Unix seconds", ErrBadTimestamp, tsText)
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	if d := now().Sub(time.Unix(ts, 0)); d > Tolerance || d < -Tolerance {
		return Event{}, fmt.Errorf("%w: %s off", ErrBadTimestamp, d.Round(time.Second))
	}
	mac := hmac.New(sha256.New, r.key)
	mac.Write([]byte(id + "." + tsText + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	ok := false
	// The header may carry several space-separated signatures (during a
	// secret rotation); one valid v1 signature is enough.
	for _, s := range strings.Fields(sigs) {
		version, sig, found := strings.Cut(s, ",")
		if !found || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err == nil && hmac.Equal(got, want) {
			ok = true
		}
	}
	if !ok {
		return Event{}, ErrBadSignature
	}
	var ev Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return Event{}, fmt.Errorf("body is not a ticketd event: %w", err)
	}
	ev.WebhookID = id
	return ev, nil
}

// ServeHTTP answers 204 for a delivery it acted on, 200 for a duplicate it
// had already acted on, 401 for a forged or stale one, 400 for a malformed
// one and 500 when acting or recording failed (ticketd will retry).
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxBody+1))
	if err != nil || len(body) > maxBody {
		http.Error(w, "unreadable or too large body", http.StatusBadRequest)
		return
	}
	ev, err := r.Verify(req.Header, body)
	switch {
	case errors.Is(err, ErrMissingHeaders), errors.Is(err, ErrBadTimestamp), errors.Is(err, ErrBadSignature):
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fresh, err := r.record(ev, body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if !fresh {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// record acts on ev unless its webhook-id was seen before, in which case
// it only counts the duplicate. It reports whether ev was new.
func (r *Receiver) record(ev Event, body []byte) (bool, error) {
	tx, err := r.db.Begin()
	if err != nil {
		return false, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.Exec(`UPDATE received SET duplicates = duplicates + 1 WHERE webhook_id = ?`, ev.WebhookID)
	if err != nil {
		return false, fmt.Errorf("count duplicate: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return false, errors.Join(err, tx.Commit())
	}
	_, err = tx.Exec(`INSERT INTO received (webhook_id, type, body, received_at) VALUES (?, ?, ?, ?)`,
		ev.WebhookID, ev.Type, string(body), time.Now().UTC().Format(time.RFC3339Nano))
	if err != nil {
		return false, fmt.Errorf("record %s: %w", ev.WebhookID, err)
	}
	if err := r.Act(ev); err != nil {
		return false, fmt.Errorf("act on %s: %w", ev.WebhookID, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("commit %s: %w", ev.WebhookID, err)
	}
	return true, nil
}

// Stats counts what the receiver saw: distinct webhook-ids acted on, and
// the requests that repeated one of them (stopped by the dedupe).
func (r *Receiver) Stats() (acted, duplicates int, err error) {
	err = r.db.QueryRow(`SELECT count(*), coalesce(sum(duplicates), 0) FROM received`).Scan(&acted, &duplicates)
	if err != nil {
		return 0, 0, fmt.Errorf("read stats: %w", err)
	}
	return acted, duplicates, nil
}
