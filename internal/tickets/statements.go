package tickets

// writeStatements are the PostgreSQL statements that begin a write, built
// once per Service because each also selects its outbox's subscription
// probe (SubscriptionProbe): the write learns in a round trip it makes
// anyway whether the outbox needs to read the tenant's subscriptions.
type writeStatements struct {
	createClaiming, create string // createTicketSQL, with the ledger's claim and without
	// createAlone is createAloneSQL; empty for an outbox without a probe,
	// which reads the subscriptions itself in the write's transaction.
	createAlone  string
	lockClaiming string // lockClaimingSQL
}

func newWriteStatements(subscribed string) writeStatements {
	st := writeStatements{
		createClaiming: createTicketSQL(true, subscribed),
		create:         createTicketSQL(false, subscribed),
		lockClaiming:   lockClaimingSQL(subscribed),
	}
	if subscribed != subscribedUnknown {
		st.createAlone = createAloneSQL(subscribed)
	}
	return st
}
