package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/server"
)

// reached answers 204 so a test sees the request got past the middleware.
var reached = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestOrigin(t *testing.T) {
	t.Parallel()
	production, err := server.Origin(server.OriginOptions{
		PublicURL:      "https://tickets.example.com",
		AllowedOrigins: []string{"https://console.example.com:8443"},
		AllowedHosts:   []string{"ticketd.internal:8080"},
	})
	if err != nil {
		t.Fatal(err)
	}
	dev, err := server.Origin(server.OriginOptions{PublicURL: "http://127.0.0.1:8080"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		mw     func(http.Handler) http.Handler
		host   string
		origin []string
		want   int
	}{
		{"NoOrigin", production, "tickets.example.com", nil, http.StatusNoContent},
		{"PublicOrigin", production, "tickets.example.com", []string{"https://tickets.example.com"}, http.StatusNoContent},
		{"PublicOriginDefaultPortAndCase", production, "Tickets.Example.com:443", []string{"https://TICKETS.example.com:443"}, http.StatusNoContent},
		{"ExtraOrigin", production, "tickets.example.com", []string{"https://console.example.com:8443"}, http.StatusNoContent},
		{"ExtraHost", production, "ticketd.internal", nil, http.StatusNoContent},
		{"EvilOrigin", production, "tickets.example.com", []string{"https://evil.example"}, http.StatusForbidden},
		{"OriginOtherScheme", production, "tickets.example.com", []string{"http://tickets.example.com"}, http.StatusForbidden},
		{"OriginOtherPort", production, "tickets.example.com", []string{"https://console.example.com"}, http.StatusForbidden},
		{"NullOrigin", production, "tickets.example.com", []string{"null"}, http.StatusForbidden},
		{"TwoOrigins", production, "tickets.example.com", []string{"https://tickets.example.com", "https://evil.example"}, http.StatusForbidden},
		// DNS rebinding: page and Host both carry the attacker's name.
		{"RebindingInProduction", production, "evil.example", []string{"http://evil.example"}, http.StatusForbidden},
		{"EvilHostWithoutOrigin", production, "evil.example", nil, http.StatusForbidden},
		{"LoopbackHostInProduction", production, "127.0.0.1:8080", nil, http.StatusForbidden},
		{"DevLoopbackHosts", dev, "localhost:8080", nil, http.StatusNoContent},
		{"DevIPv6Loopback", dev, "[::1]:8080", nil, http.StatusNoContent},
		{"DevPublicOrigin", dev, "127.0.0.1:8080", []string{"http://127.0.0.1:8080"}, http.StatusNoContent},
		{"DevRebinding", dev, "evil.example:8080", []string{"http://evil.example:8080"}, http.StatusForbidden},
		{"DevOtherLocalOrigin", dev, "127.0.0.1:8080", []string{"http://localhost:3000"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
			r.Host = tt.host
			r.Header["Origin"] = tt.origin
			w := httptest.NewRecorder()
			tt.mw(reached).ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("status = %d, want %d (%s)", w.Code, tt.want, w.Body)
			}
			if tt.want == http.StatusForbidden && w.Header().Get("Content-Type") != "application/json" {
				t.Errorf("refusal is %q, want a JSON error body", w.Header().Get("Content-Type"))
			}
		})
	}
}

func TestOriginConfigErrors(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]server.OriginOptions{
		"NoPublicURL":       {},
		"RelativePublicURL": {PublicURL: "tickets.example.com"},
		"OriginWithPath":    {PublicURL: "https://tickets.example.com", AllowedOrigins: []string{"https://a.example/app"}},
		"OriginNoScheme":    {PublicURL: "https://tickets.example.com", AllowedOrigins: []string{"a.example"}},
		"EmptyHost":         {PublicURL: "https://tickets.example.com", AllowedHosts: []string{""}},
	} {
		if _, err := server.Origin(opts); err == nil {
			t.Errorf("%s: Origin accepted %+v", name, opts)
		}
	}
}

// TestMalformedBearerIsNoToken: a header that is not exactly
// "Bearer <b64token>" reaches the route as no header at all, so /mcp (whose
// SDK splits on any whitespace) and /api/v1 answer it alike.
func TestMalformedBearerIsNoToken(t *testing.T) {
	t.Parallel()
	var got []string
	h := server.SingleAuthorization(nil)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Values("Authorization")
		w.WriteHeader(http.StatusNoContent)
	}))
	for value, kept := range map[string]bool{
		"Bearer abc.DEF-_~+/==": true,
		"bearer abc":            true,
		"Bearer\tabc":           false,
		"Bearer  abc":           false,
		"Bearer abc def":        false,
		"Basic abc":             false,
		"Bearer ":               false,
		"Bearer a=b":            false,
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", value)
		h.ServeHTTP(httptest.NewRecorder(), r)
		if (len(got) == 1) != kept {
			t.Errorf("%q reached the route as %q, want kept=%v", value, got, kept)
		}
	}
}

func TestSingleAuthorization(t *testing.T) {
	t.Parallel()
	mw := server.SingleAuthorization(nil)
	for name, tc := range map[string]struct {
		values []string
		want   int
	}{
		"None":     {nil, http.StatusNoContent},
		"One":      {[]string{"Bearer a"}, http.StatusNoContent},
		"Two":      {[]string{"Bearer a", "Bearer b"}, http.StatusBadRequest},
		"Oversize": {[]string{"Bearer " + strings.Repeat("a", 16<<10)}, http.StatusBadRequest},
		"AtLimit":  {[]string{"Bearer " + strings.Repeat("a", 16<<10-7)}, http.StatusNoContent},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header["Authorization"] = tc.values
		w := httptest.NewRecorder()
		mw(reached).ServeHTTP(w, r)
		if w.Code != tc.want {
			t.Errorf("%s: status %d, want %d", name, w.Code, tc.want)
		}
		if tc.want == http.StatusBadRequest && w.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: no WWW-Authenticate challenge", name)
		}
	}
}

// TestHost: the Host check alone refuses a rebinding name on routes that
// keep their own Origin rules, and AnyAddress admits address literals (a
// scraper's) but still no foreign name.
func TestHost(t *testing.T) {
	t.Parallel()
	opts := server.OriginOptions{PublicURL: "https://tickets.example.com", AllowedHosts: []string{"ticketd.internal"}}
	strict, err := server.Host(opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.AnyAddress = true
	addresses, err := server.Host(opts)
	if err != nil {
		t.Fatal(err)
	}
	for host, want := range map[string][2]int{
		"tickets.example.com":     {204, 204},
		"TICKETS.example.com:443": {204, 204},
		"ticketd.internal:8080":   {204, 204},
		"rebind.attacker.example": {403, 403},
		"10.0.3.7:8080":           {403, 204},
		"[fd00::7]:8080":          {403, 204},
		"localhost:8080":          {403, 403},
	} {
		for i, mw := range []func(http.Handler) http.Handler{strict, addresses} {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			r.Host = host
			r.Header.Set("Origin", "https://elsewhere.example") // not Host's business
			w := httptest.NewRecorder()
			mw(reached).ServeHTTP(w, r)
			if w.Code != want[i] {
				t.Errorf("Host %q (any address %v): %d, want %d", host, i == 1, w.Code, want[i])
			}
		}
	}
}
