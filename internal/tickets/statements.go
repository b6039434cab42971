package tickets

import (
	"github.com/ticketd/ticketd/internal/db"
	"github.com/ticketd/ticketd/internal/operations"
)

// writeStatements are the PostgreSQL statements that begin a write, built
// once per Service because each also selects its outbox's subscription
// probe (SubscriptionProbe): the write learns in a round trip it makes
// anyway whether the outbox needs to read the tenant's subscriptions.
type writeStatements struct {
	createClaiming, create string // createTicketSQL, with the ledger's claim and without
	// createAlone is createAloneSQL, numbered for db.Query; empty for an
	// outbox without a probe, which reads the subscriptions itself in the
	// write's transaction.
	createAlone  db.Named
	lockClaiming string // lockClaimingSQL
}

func newWriteStatements(subscribed string) writeStatements {
	st := writeStatements{
		createClaiming: createTicketSQL(true, subscribed),
		create:         createTicketSQL(false, subscribed),
		lockClaiming:   lockClaimingSQL(subscribed),
	}
	if subscribed != subscribedUnknown {
		st.createAlone = db.NewNamed(createAloneSQL(subscribed))
	}
	return st
}

// createTicketSQL does insertTicketSteps' three statements in one round
// trip, and with claim the ledger's claim too (operations.ClaimWith): one
// statement then claims the key and, only when the claim won, takes the
// number and inserts ticket and event. The number is the next value of the
// project's own sequence (migrations/postgres/00004_ticket_numbers.sql),
// which locks nothing until COMMIT, so creates in one project do not queue
// behind each other (docs/perf.md). The event's foreign key to the ticket is
// checked at the end of the statement, after both inserts. The one row says
// whether the claim won, when the project exists the number and key, and
// what subscribed, the outbox's probe (subscribedSQL), says.
func createTicketSQL(claim bool, subscribed string) string {
	with, won := "WITH ", "true"
	if claim {
		with, won = "WITH "+operations.ClaimWith+", ", operations.ClaimWon
	}
	return with + createStepsSQL(won) + `
SELECT ` + won + `, (SELECT number FROM t), (SELECT key FROM t), ` + subscribed
}

// createStepsSQL is a create statement's number, ticket and event, all
// gated on won.
func createStepsSQL(won string) string {
	return `p AS MATERIALIZED (
	SELECT key, nextval(number_seq::regclass) AS number FROM projects
	WHERE tenant_id = @tenant AND id = @project AND ` + won + `
), t AS (
	INSERT INTO "tickets" (id, tenant_id, project_id, number, key, title, description, priority, status, labels,
		reporter, operation_id, version, created_at, updated_at)
	SELECT CAST(@id AS uuid), @tenant, @project, p.number, p.key || '-' || p.number, @title, @description,
		@priority, @status, @labels, @reporter, CAST(@op AS uuid), 1, CAST(@now AS timestamptz), CAST(@now AS timestamptz)
	FROM p
	RETURNING id, number, key
), e AS (
	INSERT INTO "ticket_events" (id, tenant_id, ticket_id, seq, version, kind, actor, operation_id, changes, created_at)
	SELECT CAST(@event AS uuid), @tenant, t.id, 1, 1, @kind, @reporter, CAST(@op AS uuid), @changes, CAST(@now AS timestamptz)
	FROM t
)`
}
