package githubtest

import (
	"time"

	"github.com/ticketd/ticketd/internal/ssrf"
	"github.com/ticketd/ticketd/internal/tracked"
	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
)

// Credential is the name of the credential Tracked declares: what a test
// project names as backend.credential.
const Credential = "test-github"

// credentialEnv is the variable Tracked's credential reads.
const credentialEnv = "GITHUBTEST_TOKEN"

// Tracked is the tracker connection of a test's service, set up as an
// operator would: one credential, Credential, for every tenant, whose
// variable holds token, and the endpoint policy of --dev (any host,
// loopback and plain http), since the fake listens on loopback.
func Tracked(token string, timeout time.Duration) tracked.Options {
	return TrackedWith(token, github.Options{Timeout: timeout})
}

// TrackedWith is Tracked with the adapter's other options (the per-host
// cap and breaker) as opts gives them; its credential and guard are set.
func TrackedWith(token string, opts github.Options) tracked.Options {
	creds := tracker.Credentials{{Name: Credential, Env: credentialEnv}}
	guard := ssrf.Guard{AllowPrivate: true}
	opts.Credentials, opts.Guard = creds, guard
	opts.Getenv = func(name string) string {
		if name == credentialEnv {
			return token
		}
		return ""
	}
	return tracked.Options{Open: github.Opener(opts), Credentials: creds, Guard: guard}
}
