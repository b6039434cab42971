package mcptools

import (
	"context"
	"errors"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/ticketd/ticketd/internal/authn"
)

// tokenInfoPrincipal is the auth.TokenInfo.Extra key under which
// TokenVerifier stores the Principal.
const tokenInfoPrincipal = "principal"

// TokenVerifier adapts v for the SDK's auth.RequireBearerToken. The
// TokenInfo's UserID is the subject, which the SDK uses to bind sessions to
// one user; the full Principal is in Extra for PrincipalFrom. Rejections
// match auth.ErrInvalidToken as well as authn.ErrInvalidToken, because the
// SDK answers 401 only for its own sentinel (and 500 for anything else).
func TokenVerifier(v *authn.Verifier) auth.TokenVerifier {
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		p, err := v.Verify(ctx, token)
		if err != nil {
			return nil, sdkInvalidToken{err}
		}
		return &auth.TokenInfo{
			UserID: p.Subject,
			Scopes: p.Scopes,
			// The SDK refuses a TokenInfo past Expiration; AcceptUntil
			// includes the verifier's leeway, so /mcp and /api/v1 accept
			// a token for exactly as long as each other.
			Expiration: p.AcceptUntil,
			Extra:      map[string]any{tokenInfoPrincipal: p},
		}, nil
	}
}

// sdkInvalidToken keeps the verifier's message and chain while also
// matching the SDK's sentinel.
type sdkInvalidToken struct{ err error }

func (e sdkInvalidToken) Error() string { return e.err.Error() }
func (e sdkInvalidToken) Unwrap() error { return e.err }
func (e sdkInvalidToken) Is(target error) bool {
	return target == auth.ErrInvalidToken && errors.Is(e.err, authn.ErrInvalidToken)
}

// PrincipalFrom returns the Principal that TokenVerifier stored in info. It
// is nil-safe because handlers see a nil TokenInfo on the stdio and in-memory
// transports; ok is false then, and for a TokenInfo built by anything else.
func PrincipalFrom(info *auth.TokenInfo) (p authn.Principal, ok bool) {
	if info == nil {
		return authn.Principal{}, false
	}
	p, ok = info.Extra[tokenInfoPrincipal].(authn.Principal)
	return p, ok
}

// GrantedScopes lists the ticketd scopes p may use, with what
// tickets:admin implies spelled out (authn.Principal.HasScope), so a check
// that compares scope names literally (step-up, tools/list filtering)
// agrees with the per-call check.
func GrantedScopes(p authn.Principal) []string {
	var granted []string
	for _, s := range []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin} {
		if p.HasScope(s) {
			granted = append(granted, s)
		}
	}
	return granted
}

// TokenScopes returns the scopes granted to the token auth.RequireBearerToken
// verified for ctx (mcpedge.StepUpOptions.Scopes), or nil.
func TokenScopes(ctx context.Context) []string {
	p, ok := PrincipalFrom(auth.TokenInfoFromContext(ctx))
	if !ok {
		return nil
	}
	return GrantedScopes(p)
}
