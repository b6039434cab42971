package jira

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/ticketd/ticketd/internal/tracker/trackerhttp"
)

// Comment is a comment on an issue.
type Comment struct {
	ID        int64
	Issue     string // the key of the issue it is on
	URL       string // <site>/browse/<KEY>?focusedCommentId=<id>, built by ticketd
	Body      string // the text of its ADF document
	CreatedAt time.Time
}

type commentJSON struct {
	ID      string          `json:"id"`
	Body    json.RawMessage `json:"body"`
	Created jiraTime        `json:"created"`
}

func (p *Project) toComment(key string, c commentJSON) Comment {
	id, _ := strconv.ParseInt(c.ID, 10, 64)
	return Comment{ID: id, Issue: key, URL: p.browse(key) + "?focusedCommentId=" + strconv.FormatInt(id, 10),
		Body: DocumentText(c.Body), CreatedAt: time.Time(c.Created)}
}

// CreateComment adds body, as an ADF document, to issue key. body carries
// its operation's marker (tracker.ActionMarker), by which reconciliation
// finds it among the issue's comments.
func (p *Project) CreateComment(ctx context.Context, key, body string) (Comment, error) {
	path, err := issuePath(key)
	if err != nil {
		return Comment{}, fmt.Errorf("create comment: %w", err)
	}
	path += "/comment"
	var got commentJSON
	if err := p.call(ctx, "create comment", http.MethodPost, path, nil, map[string]any{"body": Document(body)}, &got); err != nil {
		return Comment{}, err
	}
	return p.toComment(key, got), nil
}

// ListComments lists the comments of issue key, oldest first, every page.
// Jira reads them from the issue, not its search index: a comment it has
// acknowledged is listed.
func (p *Project) ListComments(ctx context.Context, key string) ([]Comment, error) {
	path, err := issuePath(key)
	if err != nil {
		return nil, fmt.Errorf("list comments: %w", err)
	}
	path += "/comment"
	var out []Comment
	for range maxPages {
		var page struct {
			StartAt  int           `json:"startAt"`
			Total    int           `json:"total"`
			Comments []commentJSON `json:"comments"`
		}
		q := url.Values{"startAt": {strconv.Itoa(len(out))}, "maxResults": {strconv.Itoa(pageSize)}, "orderBy": {"created"}}
		if err := p.call(ctx, "list comments", http.MethodGet, path, q, nil, &page); err != nil {
			return nil, err
		}
		for _, c := range page.Comments {
			out = append(out, p.toComment(key, c))
		}
		if len(page.Comments) == 0 || len(out) >= page.Total {
			return out, nil
		}
	}
	return nil, fmt.Errorf("list comments: %w", trackerhttp.ErrTooManyPages)
}

// DeleteComment deletes comment id of issue key: how ticketd removes a
// duplicate comment the tracker let through.
func (p *Project) DeleteComment(ctx context.Context, key string, id int64) error {
	path, err := issuePath(key)
	if err != nil {
		return fmt.Errorf("delete comment: %w", err)
	}
	path += "/comment/" + strconv.FormatInt(id, 10)
	return p.call(ctx, "delete comment", http.MethodDelete, path, nil, nil, nil)
}
