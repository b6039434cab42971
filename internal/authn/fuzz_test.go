package authn_test

import (
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/ticketd/ticketd/internal/authn"
)

// FuzzVerify feeds arbitrary strings to Verify. It must never panic, and
// must accept only the one valid token it was seeded with: any other string,
// including other spellings of it, is an error wrapping ErrInvalidToken.
func FuzzVerify(f *testing.F) {
	v := newVerifier(f, authn.Config{HS256Secret: testSecret})
	valid := sign(f, jwt.SigningMethodHS256, testSecret, "", validClaims())
	f.Add(valid)
	f.Add("")
	f.Add("..")
	f.Add("a.b.c")
	f.Add(valid + "=")
	f.Add(handToken(f, map[string]any{"alg": "none"}, validClaims()))
	f.Add(handToken(f, map[string]any{"alg": "HS256", "kid": 7}, jwt.MapClaims{"exp": "x", "aud": []any{1}, "scp": map[string]any{}}))
	f.Fuzz(func(t *testing.T, raw string) {
		t.Parallel()
		_, err := v.Verify(t.Context(), raw)
		switch {
		case err == nil && raw != valid:
			t.Fatalf("Verify accepted %q, which is not the seeded token", raw)
		case err != nil && !errors.Is(err, authn.ErrInvalidToken):
			t.Fatalf("Verify error %q does not wrap ErrInvalidToken", err)
		}
	})
}
