package tickets

import (
	"fmt"
	"sync"

	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/approval"
	"github.com/ticketd/ticketd/internal/cursor"
	"github.com/ticketd/ticketd/internal/operations"
	"github.com/ticketd/ticketd/internal/people"
)

// Actions lists the ledger actions of the service's writes, for metrics
// that show every action from the start.
func Actions() []string {
	return []string{ActionCreateTicket, ActionUpdateTicket, ActionBulkUpdateTickets, ActionAddComment, ActionLinkTickets}
}

// Page sizes for lists.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// Options configures a Service. Zero values take the defaults.
type Options struct {
	Ledger operations.Options
	// Outbox receives every write's event in the write's transaction; nil
	// tells nobody.
	Outbox Outbox
	// Deliveries, when set, says in GetOperation what webhooks have been
	// told of the operation's events.
	Deliveries DeliveryLog
	// CursorKey signs pagination cursors. Replicas behind one load balancer
	// need the same key; empty means a random key per process.
	CursorKey []byte
	// OnWrite, when set, is told the result of every write (CreateTicket,
	// UpdateTicket, AddComment): its ledger action, whether it was a replay
	// and its error (nil on success). Operation metrics hang off it, so the
	// writes of every transport, the console's included, are counted in one
	// place. It must be cheap and safe for concurrent use.
	OnWrite func(action string, replayed bool, err error)
	// Tracked connects tracker-backed projects (docs/contract.md#tracker-backed-projects):
	// internal/tracked.Options; nil connects none, so none can be created.
	Tracked Connector
	// Reads, when set, serves the lists (tickets, search, history,
	// comments) instead of the primary: a read replica's handle that never
	// answers older than the primary (db.Replica.Reads). Everything that
	// decides or answers for a write reads the primary (docs/scale.md).
	Reads *gorm.DB
	// Approvals, when set, gates the writes its policy names behind a
	// person's yes (docs/contract.md#approval); nil asks nobody.
	Approvals *approval.Gate
}

// Service is the one application layer both transports call.
type Service struct {
	db      *gorm.DB
	reads   *gorm.DB // the lists' handle: Options.Reads, else db
	ledger  *operations.Ledger
	cursors cursor.Codec
	onWrite func(action string, replayed bool, err error)
	outbox  Outbox
	// deliveries reads what webhooks were told; nil reports none.
	deliveries DeliveryLog
	// trackers reaches tracker-backed projects; nil without Options.Tracked.
	trackers Trackers
	// backends caches each project's projectBackends; a project's
	// backend never changes once created.
	backends sync.Map
	// approvals gates consequential writes; nil asks nobody.
	approvals *approval.Gate
	// people is the tenant directory assignees are checked against.
	people *people.Directory
	// writeSQL is the PostgreSQL write statements that select the outbox's
	// subscription probe.
	writeSQL writeStatements
	// subscribed holds the tenants whose last create found a subscription
	// (lastSubscribed).
	subscribed sync.Map
}

// NewService returns a Service over a migrated database.
func NewService(db *gorm.DB, opts Options) *Service {
	reads := opts.Reads
	if reads == nil {
		reads = db
	}
	s := &Service{db: db, reads: reads, ledger: operations.NewLedger(db, opts.Ledger), cursors: cursor.New(opts.CursorKey), onWrite: opts.OnWrite, outbox: opts.Outbox, deliveries: opts.Deliveries,
		approvals: opts.Approvals, people: people.NewDirectory(db, reads), writeSQL: newWriteStatements(subscribedSQL(opts.Outbox))}
	if opts.Tracked != nil {
		s.trackers = opts.Tracked.Connect(Mirror{s})
	}
	return s
}

// report tells Options.OnWrite the result of one write.
func (s *Service) report(action string, replayed bool, err error) {
	if s.onWrite != nil {
		s.onWrite(action, replayed, err)
	}
}

// requireID refuses the zero operation ID: every write needs one, and the
// adapter that parsed the caller's (operations.ParseID) names its field.
func requireID(id operations.ID) error {
	if id.IsZero() {
		return fmt.Errorf("%w: a write needs an operation ID", ErrInvalid)
	}
	return nil
}

func pageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultLimit, nil
	case limit < 0 || limit > MaxLimit:
		return 0, invalidField("limit", "must be between 1 and %d, got %d", MaxLimit, limit)
	}
	return limit, nil
}
