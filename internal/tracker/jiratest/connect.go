package jiratest

import (
	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/jira"
)

// Credential is the name of the credential Tracked declares: what a test
// project names as backend.credential.
const Credential = "test-jira"

// credentialEnv is the variable Tracked's credential reads.
const credentialEnv = "JIRATEST_TOKEN"

// Tracked is the tracker connection of a test's service, set up as an
// operator would: one credential, Credential, for every tenant, whose
// variable holds secret (email:api_token for Basic auth, else a Bearer
// PAT), the adapter's other options as opts gives them, and the endpoint
// policy of --dev (any host, loopback and plain http), since the fake
// listens on loopback.
func Tracked(secret string, opts jira.Options) tracked.Options {
	creds := tracker.Credentials{{Name: Credential, Env: credentialEnv}}
	guard := ssrf.Guard{AllowPrivate: true}
	opts.Credentials, opts.Guard = creds, guard
	opts.Getenv = func(name string) string {
		if name == credentialEnv {
			return secret
		}
		return ""
	}
	return tracked.Options{Open: jira.PortOpener(opts), Credentials: creds, Guard: guard}
}

// Backend is a Jira backend for project key on site with §22's defaults,
// naming Credential.
func Backend(site, key string) *tracker.Backend {
	return &tracker.Backend{Kind: tracker.KindJira, Site: site, ProjectKey: key, Credential: Credential}
}
