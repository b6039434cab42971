package tracked_test

import (
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/ticketd/ticketd/internal/tickets"
)

func newID() string { return uuid.NewString() }

// outboxFunc is an Outbox whose Enqueue runs a function inside the write's
// transaction.
type outboxFunc func(ev tickets.WriteEvent) error

func (f outboxFunc) Enqueue(_ *gorm.DB, ev tickets.WriteEvent) error { return f(ev) }
