package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/tracker"
	"github.com/ticketd/ticketd/internal/tracker/github"
	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestExternalURLIsBuiltNotCopied: whatever html_url the tracker answers
// (javascript:…), the issue's and the comment's URL are ticketd's own,
// https on the API's web host.
func TestExternalURLIsBuiltNotCopied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	gh := githubtest.New("good")
	apiURL := githubtest.Start(t, gh)
	gh.AnswerHTMLURL("javascript:alert(document.cookie)")
	tr := open(t, apiURL, "good")
	host := strings.TrimSuffix(strings.TrimPrefix(apiURL, "http://"), "/")
	mark := tracker.Mark{Tenant: "acme", OperationID: "op-1"}
	issue, err := tr.CreateIssue(ctx, tracker.NewIssue{Title: "Widget jams", Body: mark.Text(), Labels: []string{tracker.Label}, Mark: mark})
	if err != nil {
		t.Fatal(err)
	}
	if want := "https://" + host + "/acme/widgets/issues/1"; issue.URL != want {
		t.Errorf("issue URL = %q, want %q", issue.URL, want)
	}
	c, err := tr.CreateComment(ctx, issue.Ref, "Seen.")
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("https://%s/acme/widgets/issues/1#issuecomment-%s", host, c.ID); c.URL != want {
		t.Errorf("comment URL = %q, want %q", c.URL, want)
	}
	listed, err := tr.FindMarked(ctx, mark, issue.CreatedAt.Add(-1))
	if err != nil || len(listed) != 1 || listed[0].URL != issue.URL {
		t.Errorf("listed = %+v, %v; want the built URL", listed, err)
	}
}

// TestRedirectIsNotFollowed: a tracker that answers with a redirect to
// another host does not get ticketd to send the request there, so the
// token never reaches it.
func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var elsewhere atomic.Int32
	var leaked sync.Map
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		leaked.Store(r.Header.Get("Authorization"), true)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"number":1}`))
	}))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	tr := open(t, redirecting.URL+"/", "ghp_secret")
	_, err := tr.CreateIssue(context.Background(), tracker.NewIssue{Title: "Widget jams"})
	if err == nil || errors.Is(err, tracker.ErrNotSent) || errors.Is(err, tracker.ErrRejected) {
		t.Errorf("create answered by a redirect = %v; want an error that leaves the outcome open", err)
	}
	if _, err := tr.GetIssue(context.Background(), "1"); err == nil {
		t.Error("get answered by a redirect succeeded")
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the other host got %d requests; want none", n)
	}
	if _, ok := leaked.Load("Bearer ghp_secret"); ok {
		t.Error("the token reached the other host")
	}
}

// TestAnswersAreBounded: a tracker cannot make ticketd hold an answer
// larger than its bound, in the body or in the headers.
func TestAnswersAreBounded(t *testing.T) {
	t.Parallel()
	var sent atomic.Int64
	huge := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("headers") != "" || strings.HasSuffix(r.URL.Path, "/2") {
			w.Header().Set("X-Padding", strings.Repeat("a", 128<<10))
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"number":1,"body":"`))
		chunk := []byte(strings.Repeat("a", 64<<10))
		for range 256 { // 16 MiB
			n, err := w.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
		_, _ = w.Write([]byte(`"}`))
	}))
	t.Cleanup(huge.Close)
	opts := options("good")
	opts.MaxAnswer = 1 << 20
	// The bound is what is tested, not the timeout: reading a MiB on a
	// loaded machine has taken longer than the suite's usual 500 ms.
	opts.Timeout = 30 * time.Second
	tr, err := github.Open(backend(huge.URL+"/"), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tr.GetIssue(context.Background(), "1")
	if err == nil || !strings.Contains(err.Error(), "larger than ticketd reads") {
		t.Errorf("get of a 16 MiB answer = %v; want it refused as too large", err)
	}
	if _, err := tr.GetIssue(context.Background(), "2"); err == nil {
		t.Error("get of an answer with 128 KiB of headers succeeded")
	}
}

// TestCredentialsAreTheOperators: a backend opens only with a credential
// the operator declared for its tenant, and ticketd reads no variable but
// that credential's.
func TestCredentialsAreTheOperators(t *testing.T) {
	t.Parallel()
	var read []string
	var mu sync.Mutex
	opts := github.Options{
		Credentials: tracker.Credentials{{Name: "gh", Env: "GH_TOKEN"}, {Name: "beta", Env: "BETA_TOKEN", Tenants: []string{"beta"}}},
		Getenv: func(name string) string {
			mu.Lock()
			defer mu.Unlock()
			read = append(read, name)
			return "ghp_x"
		},
	}
	for _, b := range []tracker.Backend{
		{Kind: tracker.KindGitHub, Repository: "acme/widgets", Credential: "TICKETD_JWT_HS256_SECRET", Tenant: "acme"},
		{Kind: tracker.KindGitHub, Repository: "acme/widgets", Credential: "undeclared", Tenant: "acme"},
		{Kind: tracker.KindGitHub, Repository: "acme/widgets", Credential: "beta", Tenant: "acme"},
		{Kind: tracker.KindGitHub, Repository: "acme/widgets", Tenant: "acme"},
	} {
		if _, err := github.Open(b, opts); !errors.Is(err, tracker.ErrMisconfigured) {
			t.Errorf("open with credential %q for %s = %v; want ErrMisconfigured", b.Credential, b.Tenant, err)
		}
	}
	if len(read) != 0 {
		t.Errorf("variables read for refused backends: %v; want none", read)
	}
	if _, err := github.Open(tracker.Backend{Kind: tracker.KindGitHub, Repository: "beta/widgets", Credential: "beta", Tenant: "beta"}, opts); err != nil {
		t.Errorf("open with beta's own credential: %v", err)
	}
	if len(read) != 1 || read[0] != "BETA_TOKEN" {
		t.Errorf("variables read = %v; want BETA_TOKEN alone", read)
	}
}
