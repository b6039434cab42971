package githubtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ticketd/ticketd/internal/tracker/githubtest"
)

// TestDumpUsesGitHubsNames files an issue and a comment through the fake's
// API and checks that the dump names their fields as GitHub's JSON does
// (number, title, comments[].body), not as the Go struct does.
func TestDumpUsesGitHubsNames(t *testing.T) {
	t.Parallel()
	gh := githubtest.New("tok")
	mux := http.NewServeMux()
	mux.Handle("/", gh.Handler())
	mux.Handle("GET /_issues/", gh.DumpHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()
	gh.SetBaseURL(srv.URL + "/")
	post := func(path, body string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer tok")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %s", path, res.Status)
		}
	}
	post("/repos/acme/widgets/issues", `{"title":"Widget jams","body":"<!-- marker -->","labels":["ticketd"]}`)
	post("/repos/acme/widgets/issues/1/comments", `{"body":"Seen on line 3."}`)

	res, err := http.Get(srv.URL + "/_issues/acme/widgets")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"body": "<!-- marker -->"`) {
		t.Errorf("dump escapes the marker or renames body:\n%s", raw)
	}
	var got []map[string]any
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("dump holds %d issues, want 1: %v", len(got), got)
	}
	i := got[0]
	if i["number"] != float64(1) || i["title"] != "Widget jams" || i["state"] != "open" || i["Number"] != nil {
		t.Errorf("dumped issue = %v, want GitHub's names: number 1, title, state open", i)
	}
	comments, _ := i["comments"].([]any)
	if len(comments) != 1 || comments[0].(map[string]any)["body"] != "Seen on line 3." {
		t.Errorf("dumped comments = %v, want the one comment with GitHub's body", i["comments"])
	}
}
