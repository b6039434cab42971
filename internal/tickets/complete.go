package tickets

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Reads for MCP resources, prompts and completion (docs/agents.md#resources):
// a ticket's latest comments, and the keys a typed prefix may complete to.

// MaxCompletions bounds what CompleteTicketKeys returns.
const MaxCompletions = 20

// keyPrefixPattern is what may start a ticket key: anything else
// completes to nothing, and needs no escaping in a LIKE pattern.
var keyPrefixPattern = regexp.MustCompile(`^[A-Za-z0-9-]{0,30}$`)

// CompleteTicketKeys returns up to limit (at most MaxCompletions) keys of
// the tenant's tickets that start with prefix (any case), most recently
// updated first, and whether more match.
//
// Errors: ErrUnavailable.
func (s *Service) CompleteTicketKeys(ctx context.Context, tenant, prefix string, limit int) ([]string, bool, error) {
	if !keyPrefixPattern.MatchString(prefix) {
		return nil, false, nil
	}
	limit = min(max(limit, 1), MaxCompletions)
	var keys []string
	err := s.reads.WithContext(ctx).Model(&ticketRow{}).
		Where("tenant_id = ? AND key LIKE ?", tenant, strings.ToUpper(prefix)+"%").
		Order("updated_at DESC, key").Limit(limit+1).Pluck("key", &keys).Error
	if err != nil {
		return nil, false, fmt.Errorf("%w: complete ticket keys: %v", ErrUnavailable, err)
	}
	if len(keys) > limit {
		return keys[:limit], true, nil
	}
	return keys, false, nil
}

// LatestComments returns the last n comments (n at least 1, at most
// MaxLimit) on the tenant's ticket (UUID or key), oldest first, and
// whether there are earlier ones.
//
// Errors: ErrInvalid (bad reference), ErrNotFound, ErrUnavailable.
func (s *Service) LatestComments(ctx context.Context, tenant, ticketRef string, n int) ([]Comment, bool, error) {
	t, err := s.GetTicket(ctx, tenant, ticketRef)
	if err != nil {
		return nil, false, err
	}
	n = min(max(n, 1), MaxLimit)
	var rows []commentRow
	if err := s.reads.WithContext(ctx).Where("tenant_id = ? AND ticket_id = ?", tenant, t.ID.String()).
		Order("seq DESC").Limit(n + 1).Find(&rows).Error; err != nil {
		return nil, false, fmt.Errorf("%w: latest comments: %v", ErrUnavailable, err)
	}
	earlier := len(rows) > n
	if earlier {
		rows = rows[:n]
	}
	slices.Reverse(rows)
	out := make([]Comment, len(rows))
	for i, r := range rows {
		if out[i], err = r.toComment(); err != nil {
			return nil, false, err
		}
	}
	return out, earlier, nil
}
