package trackerhttp

import (
	"io"
	"net/http"
	"time"

	"github.com/ticketd/ticketd/internal/ssrf"
)

// The transport half: what a tracker request may reach and what its
// answer may make ticketd hold, whatever the API call.

// transport dials only what g admits: the address of every connection is
// checked as it is made, not only the name at registration.
func transport(g ssrf.Guard) *http.Transport {
	return &http.Transport{
		DialContext:            g.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    10,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: MaxHeaderBytes,
	}
}

// guarded picks the transport of a request's scheme.
type guarded struct{ https, http *http.Transport }

func (g *guarded) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "http" {
		return g.http.RoundTrip(r)
	}
	return g.https.RoundTrip(r)
}

// credentialed sends requests only to the tracker's host, with its
// credential, and bounds every answer's body.
type credentialed struct {
	base                http.RoundTripper
	scheme, host, authz string
	max                 int64
}

func (c *credentialed) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != c.scheme || r.URL.Host != c.host {
		return nil, ErrOtherHost
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", c.authz)
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &bounded{rc: resp.Body, left: c.max}
	return resp, nil
}

// bounded fails a read past its limit rather than truncating silently.
type bounded struct {
	rc   io.ReadCloser
	left int64
}

func (b *bounded) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if b.left -= int64(n); b.left < 0 {
		return 0, ErrTooLarge
	}
	return n, err
}

func (b *bounded) Close() error { return b.rc.Close() }
