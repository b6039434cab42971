package tickets

// writeStatements are the PostgreSQL statements that begin a write, built
// once per Service because each also selects its outbox's subscription
// probe (SubscriptionProbe): the write learns in a round trip it makes
// anyway whether the outbox needs to read the tenant's subscriptions.
type writeStatements struct {
	createClaiming, create string // createTicketSQL, with the ledger's claim and without
	lockClaiming           string // lockClaimingSQL
}

func newWriteStatements(subscribed string) writeStatements {
	return writeStatements{
		createClaiming: createTicketSQL(true, subscribed),
		create:         createTicketSQL(false, subscribed),
		lockClaiming:   lockClaimingSQL(subscribed),
	}
}
