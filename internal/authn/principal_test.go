package authn_test

import (
	"context"
	"testing"

	"github.com/ticketd/ticketd/internal/authn"
)

func TestPrincipalHasScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		scopes []string
		want   map[string]bool
	}{
		{name: "None", scopes: nil, want: map[string]bool{authn.ScopeRead: false, authn.ScopeWrite: false, authn.ScopeAdmin: false}},
		{name: "ReadOnly", scopes: []string{authn.ScopeRead}, want: map[string]bool{authn.ScopeRead: true, authn.ScopeWrite: false, authn.ScopeAdmin: false}},
		{name: "WriteDoesNotImplyRead", scopes: []string{authn.ScopeWrite}, want: map[string]bool{authn.ScopeRead: false, authn.ScopeWrite: true, authn.ScopeAdmin: false}},
		{name: "AdminImpliesReadAndWrite", scopes: []string{authn.ScopeAdmin}, want: map[string]bool{authn.ScopeRead: true, authn.ScopeWrite: true, authn.ScopeAdmin: true}},
		{name: "UnknownScopesGrantNothing", scopes: []string{"tickets", "tickets:*", "custom:x"}, want: map[string]bool{authn.ScopeRead: false, authn.ScopeWrite: false, authn.ScopeAdmin: false, "custom:x": true}},
		{name: "NothingImpliesApprove", scopes: []string{authn.ScopeRead, authn.ScopeWrite, authn.ScopeAdmin}, want: map[string]bool{authn.ScopeApprove: false}},
		{name: "ApproveImpliesNothingElse", scopes: []string{authn.ScopeApprove}, want: map[string]bool{authn.ScopeApprove: true, authn.ScopeRead: false, authn.ScopeWrite: false, authn.ScopeAdmin: false}},
		{name: "AdminDoesNotImplyUnknown", scopes: []string{authn.ScopeAdmin}, want: map[string]bool{"custom:x": false, "": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := authn.Principal{Tenant: "acme", Subject: "alice", Scopes: tt.scopes}
			for scope, want := range tt.want {
				if got := p.HasScope(scope); got != want {
					t.Errorf("HasScope(%q) with %v = %v, want %v", scope, tt.scopes, got, want)
				}
			}
		})
	}
}

func TestPrincipalContext(t *testing.T) {
	t.Parallel()
	if _, ok := authn.PrincipalFromContext(context.Background()); ok {
		t.Error("PrincipalFromContext found a principal in an empty context")
	}
	p := authn.Principal{Tenant: "acme", Subject: "alice"}
	got, ok := authn.PrincipalFromContext(authn.ContextWithPrincipal(t.Context(), p))
	if !ok || got.Tenant != "acme" || got.Subject != "alice" {
		t.Errorf("PrincipalFromContext = %+v, %v; want %+v, true", got, ok, p)
	}
}
