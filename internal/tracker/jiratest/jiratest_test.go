package jiratest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ticketd/ticketd/internal/tracker/jiratest"
)

const doc = `{"type":"doc","version":1,"content":[{"type":"paragraph","content":[{"type":"text","text":"<!-- marker -->"}]}]}`

// client speaks to a fake with Basic auth as a@example.com:tok.
type client struct {
	t    *testing.T
	base string
}

func (c client) do(method, path, body string) (int, []byte) {
	c.t.Helper()
	req, err := http.NewRequest(method, c.base+path, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.SetBasicAuth("a@example.com", "tok")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return res.StatusCode, raw
}

func serve(t *testing.T, s *jiratest.Server) client {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/", s.Handler())
	mux.Handle("GET /_issues/", s.DumpHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.SetBaseURL(srv.URL)
	return client{t, srv.URL}
}

func create(c client, labels string) string {
	c.t.Helper()
	code, raw := c.do("POST", "/rest/api/3/issue", `{"fields":{"project":{"key":"OPS"},"issuetype":{"name":"Task"},
		"summary":"Widget jams","description":`+doc+`,"labels":`+labels+`}}`)
	var got struct{ Key string }
	if err := json.Unmarshal(raw, &got); err != nil || code != http.StatusCreated {
		c.t.Fatalf("create: %d %s", code, raw)
	}
	return got.Key
}

func searchKeys(c client, jql string) (int, []string) {
	c.t.Helper()
	body, _ := json.Marshal(map[string]any{"jql": jql, "fields": []string{"labels"}})
	code, raw := c.do("POST", "/rest/api/3/search/jql", string(body))
	var got struct {
		Issues []struct{ Key string }
	}
	_ = json.Unmarshal(raw, &got)
	var keys []string
	for _, i := range got.Issues {
		keys = append(keys, i.Key)
	}
	return code, keys
}

// TestDumpUsesJirasNames files an issue and a comment through the fake's
// API and checks that the dump names their fields as Jira's JSON does
// (key, fields.summary, fields.comment.comments[].body as ADF).
func TestDumpUsesJirasNames(t *testing.T) {
	t.Parallel()
	c := serve(t, jiratest.New("a@example.com", "tok"))
	key := create(c, `["ticketd"]`)
	if code, raw := c.do("POST", "/rest/api/3/issue/"+key+"/comment", `{"body":`+doc+`}`); code != http.StatusCreated {
		t.Fatalf("comment: %d %s", code, raw)
	}
	res, err := http.Get(c.base + "/_issues/OPS")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(raw), `"text": "<!-- marker -->"`) {
		t.Errorf("dump escapes the marker:\n%s", raw)
	}
	var got []struct {
		Key    string
		Fields struct {
			Summary string
			Labels  []string
			Status  struct{ Name string }
			Comment struct {
				Total    int
				Comments []struct{ Body struct{ Type string } }
			}
		}
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got) != 1 {
		t.Fatalf("dump = %s, %v; want one issue", raw, err)
	}
	i := got[0]
	if i.Key != "OPS-1" || i.Fields.Summary != "Widget jams" || i.Fields.Status.Name != "To Do" || len(i.Fields.Labels) != 1 {
		t.Errorf("dumped issue = %+v, want OPS-1 in To Do with Jira's names", i)
	}
	if i.Fields.Comment.Total != 1 || i.Fields.Comment.Comments[0].Body.Type != "doc" {
		t.Errorf("dumped comments = %+v, want one ADF comment", i.Fields.Comment)
	}
}

// TestSearchLagsGetDoesNot: a new issue is found by key at once, by JQL
// only once the index lag has passed.
func TestSearchLagsGetDoesNot(t *testing.T) {
	t.Parallel()
	s := jiratest.New("a@example.com", "tok")
	s.LagSearch(2 * time.Second)
	c := serve(t, s)
	key := create(c, `["ticketd","ticketd-op-0123456789abcdef"]`)
	if code, _ := c.do("GET", "/rest/api/3/issue/"+key, ""); code != http.StatusOK {
		t.Errorf("get by key during the lag: %d, want 200", code)
	}
	jql := `project = OPS AND labels = "ticketd-op-0123456789abcdef"`
	if code, keys := searchKeys(c, jql); code != http.StatusOK || len(keys) != 0 {
		t.Errorf("search during the lag = %d %v; want 200 and nothing", code, keys)
	}
	var keys []string
	for deadline := time.Now().Add(10 * time.Second); len(keys) == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
		_, keys = searchKeys(c, jql)
	}
	if len(keys) != 1 || keys[0] != key {
		t.Errorf("search after the lag = %v; want %s", keys, key)
	}
	if _, keys := searchKeys(c, `project = OPS AND labels = "other"`); len(keys) != 0 {
		t.Errorf("search for another label = %v; want nothing", keys)
	}
}

// TestJQLBeyondTicketdsIsRefused: the fake answers only the JQL it
// understands, and says so, rather than answering a query it misreads.
func TestJQLBeyondTicketdsIsRefused(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{`project = OPS AND labels = "ticketd-op-1"`, `labels = "ticketd"`, `project = OPS ORDER BY created DESC`, `labels = ticketd and project = OPS`} {
		if _, err := jiratest.ParseJQL(ok); err != nil {
			t.Errorf("ParseJQL(%q) = %v; want it understood", ok, err)
		}
	}
	for _, bad := range []string{``, `text ~ "marker"`, `project != OPS`, `labels = "x" OR labels = "y"`, `labels = "open`, `assignee = currentUser()`, `project = OPS ORDER BY rank`} {
		if _, err := jiratest.ParseJQL(bad); err == nil {
			t.Errorf("ParseJQL(%q) understood; want it refused", bad)
		}
	}
	c := serve(t, jiratest.New("a@example.com", "tok"))
	if code, _ := searchKeys(c, `summary ~ "jams"`); code != http.StatusBadRequest {
		t.Errorf("search with unknown JQL = %d, want 400", code)
	}
	q, err := jiratest.ParseJQL(`project = OPS AND labels = "a \"b\" c"`)
	if err != nil || q.Project != "OPS" || len(q.Labels) != 1 || q.Labels[0] != `a "b" c` {
		t.Errorf("quoted label = %+v, %v", q, err)
	}
}

// TestTransitionsFollowTheWorkflow: only the transitions out of the issue's
// status are listed and may be taken.
func TestTransitionsFollowTheWorkflow(t *testing.T) {
	t.Parallel()
	c := serve(t, jiratest.New("a@example.com", "tok"))
	key := create(c, `[]`)
	code, raw := c.do("GET", "/rest/api/3/issue/"+key+"/transitions", "")
	if code != http.StatusOK || !strings.Contains(string(raw), `"Start progress"`) || strings.Contains(string(raw), `"Reopen"`) {
		t.Errorf("transitions from To Do = %d %s", code, raw)
	}
	if code, _ := c.do("POST", "/rest/api/3/issue/"+key+"/transitions", `{"transition":{"id":"41"}}`); code != http.StatusBadRequest {
		t.Errorf("Reopen from To Do = %d, want 400", code)
	}
	if code, _ := c.do("POST", "/rest/api/3/issue/"+key+"/transitions", `{"transition":{"id":"21"}}`); code != http.StatusNoContent {
		t.Errorf("Done from To Do = %d, want 204", code)
	}
	if _, raw := c.do("GET", "/rest/api/3/issue/"+key+"?fields=status", ""); !strings.Contains(string(raw), `"name":"Done"`) {
		t.Errorf("after Done: %s", raw)
	}
}

// TestAuthIsBasicOrBearer: email:api_token as Basic, or the PAT as Bearer;
// anything else is 401, and a queued 401/403 fault refuses a valid caller.
func TestAuthIsBasicOrBearer(t *testing.T) {
	t.Parallel()
	s := jiratest.New("a@example.com", "tok")
	s.PAT = "pat-1"
	c := serve(t, s)
	for h, want := range map[string]int{"Bearer pat-1": 200, "Bearer tok": 401, "Basic YUBleGFtcGxlLmNvbTpub3Bl": 401, "": 401} {
		req, _ := http.NewRequest("GET", c.base+"/rest/api/3/user/search?query=a", nil)
		req.Header.Set("Authorization", h)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", h, res.StatusCode, want)
		}
	}
	s.FailCreates(jiratest.Forbidden, jiratest.Unauthorized)
	for _, want := range []int{403, 401} {
		if code, _ := c.do("POST", "/rest/api/3/issue", `{"fields":{"project":{"key":"OPS"},"issuetype":{"name":"Task"},"summary":"x"}}`); code != want {
			t.Errorf("faulted create = %d, want %d", code, want)
		}
	}
	if n := len(s.Issues("OPS")); n != 0 || s.CreateRequests() != 2 {
		t.Errorf("refused creates filed %d issues of %d requests; want none of 2", n, s.CreateRequests())
	}
}

// TestFieldsJiraRefuses: an unknown field, a label with a space, a
// description that is not ADF and an unknown assignee are 400, as on Jira.
func TestFieldsJiraRefuses(t *testing.T) {
	t.Parallel()
	c := serve(t, jiratest.New("a@example.com", "tok"))
	base := `"project":{"key":"OPS"},"issuetype":{"name":"Task"},"summary":"x"`
	for _, extra := range []string{`"status":{"name":"Done"}`, `"labels":["two words"]`, `"description":"plain"`, `"assignee":{"accountId":"nobody"}`, `"priority":{"name":"Urgent"}`} {
		if code, raw := c.do("POST", "/rest/api/3/issue", `{"fields":{`+base+`,`+extra+`}}`); code != http.StatusBadRequest {
			t.Errorf("create with %s = %d %s; want 400", extra, code, raw)
		}
	}
}
