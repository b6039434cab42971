package tracked

import (
	"encoding/json"
	"testing"
)

// TestStoredRequestsOfEarlierVersionsStillRead: a request stored before
// issues were named by a string Ref (a GitHub issue as a number, an edit's
// state as GitHub's open or closed) reads as the same request.
func TestStoredRequestsOfEarlierVersionsStillRead(t *testing.T) {
	t.Parallel()
	var c commentRequest
	if err := json.Unmarshal([]byte(`{"ticket_id":"t","issue":12,"body":"b"}`), &c); err != nil || c.Issue != "12" {
		t.Errorf("comment stored with a numbered issue = %+v, %v; want issue 12", c, err)
	}
	var e editRequest
	err := json.Unmarshal([]byte(`{"ticket_id":"t","issue":7,"edit":{"Title":null,"Body":null,"State":"closed","Labels":null}}`), &e)
	if err != nil || e.Issue != "7" || e.Edit.Status == nil || *e.Edit.Status != "closed" {
		t.Fatalf("edit stored with GitHub's state = %+v, %v; want issue 7 moving to closed", e, err)
	}
	raw, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var again editRequest
	if err := json.Unmarshal(raw, &again); err != nil || again.Issue != "7" || *again.Edit.Status != "closed" {
		t.Errorf("round trip = %+v, %v", again, err)
	}
}
