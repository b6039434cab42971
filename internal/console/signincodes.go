package console

import (
	"crypto/rand"
	"crypto/sha256"
	"sync"
	"time"

	"github.com/ticketd/ticketd/internal/authn"
)

// SignInCodeTTL is how long a sign-in code stays redeemable.
const SignInCodeTTL = 15 * time.Minute

// SignInCodes are single-use, short-lived codes that each open one console
// session for the principal they were issued for, so that a sign-in link
// (serve --dev's, for its person) carries no bearer token: a code that
// leaks after use opens nothing, and one never used dies in
// SignInCodeTTL. Codes live in this process's memory, by their SHA-256,
// and only this process redeems them. The zero value is not usable; a nil
// *SignInCodes redeems nothing.
type SignInCodes struct {
	now   func() time.Time
	mu    sync.Mutex
	codes map[[sha256.Size]byte]signInCode
}

type signInCode struct {
	principal authn.Principal
	expires   time.Time
}

// NewSignInCodes returns an empty code store on the clock now (time.Now
// when nil).
func NewSignInCodes(now func() time.Time) *SignInCodes {
	if now == nil {
		now = time.Now
	}
	return &SignInCodes{now: now, codes: map[[sha256.Size]byte]signInCode{}}
}

// Issue returns a new code (128 random bits) that signs p in once within
// SignInCodeTTL. Codes past their time are dropped on the way.
func (s *SignInCodes) Issue(p authn.Principal) string {
	code := rand.Text()
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	s.codes[sha256.Sum256([]byte(code))] = signInCode{principal: p, expires: now.Add(SignInCodeTTL)}
	return code
}

// redeem returns the principal code was issued for and forgets the code;
// ok is false for a code never issued, used already or expired.
func (s *SignInCodes) redeem(code string) (p authn.Principal, ok bool) {
	if s == nil {
		return authn.Principal{}, false
	}
	key := sha256.Sum256([]byte(code))
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	c, found := s.codes[key]
	delete(s.codes, key)
	s.sweep(now)
	if !found || !now.Before(c.expires) {
		return authn.Principal{}, false
	}
	return c.principal, true
}

// sweep drops expired codes; the caller holds mu.
func (s *SignInCodes) sweep(now time.Time) {
	for k, c := range s.codes {
		if !now.Before(c.expires) {
			delete(s.codes, k)
		}
	}
}
