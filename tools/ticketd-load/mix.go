package main

import (
	"errors"
	"math/rand/v2"
	"strconv"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The writes on existing tickets that -update-ratio and -comment-ratio mix in.
const (
	toolUpdate  = "update_ticket"
	toolComment = "add_comment"
)

// writeArgs is the input of an update_ticket or add_comment on a ticket the
// worker created. A replay re-sends the same value. Each update sets a title
// no other update sets, so every fresh update is a real change: one version
// bump per operation_id.
type writeArgs struct {
	tool        string
	OperationID string `json:"operation_id"`
	ID          string `json:"id"`
	Title       string `json:"title,omitempty"`
	Body        string `json:"body,omitempty"`
}

// newWrite returns a fresh write of a random kind on one of tickets, or
// false when the dice say create (or there is no ticket yet).
func (c *config) newWrite(tickets []string) (writeArgs, bool) {
	if len(tickets) == 0 {
		return writeArgs{}, false
	}
	id := uuid.NewString()
	w := writeArgs{OperationID: id, ID: tickets[rand.IntN(len(tickets))]}
	switch r := rand.Float64(); {
	case r < c.UpdateRatio:
		w.tool, w.Title = toolUpdate, "load update "+id[:8]
	case r < c.UpdateRatio+c.CommentRatio:
		w.tool, w.Body = toolComment, "load comment "+id[:8]
	default:
		return writeArgs{}, false
	}
	return w, true
}

var errMalformedWrite = errors.New("write result without ticket_id, replayed, and version or comment.id")

// classifyWrite turns an update_ticket or add_comment answer into a sample
// whose result is what the write made: the version an update produced or
// the comment added. A replay must name the same.
func classifyWrite(res *mcp.CallToolResult, err error) sample {
	if err != nil || res.IsError {
		return classify(res, err)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	ticketID, _ := sc["ticket_id"].(string)
	isReplay, ok := sc["replayed"].(bool)
	opID, _ := sc["operation_id"].(string)
	s := sample{outcome: applied, ticketID: ticketID, opID: opID}
	if v, isUpdate := sc["version"].(float64); isUpdate {
		s.result = strconv.FormatFloat(v, 'f', -1, 64)
	} else if c, isComment := sc["comment"].(map[string]any); isComment {
		s.result, _ = c["id"].(string)
	}
	if ticketID == "" || !ok || s.result == "" {
		return sample{outcome: malformed, err: errMalformedWrite}
	}
	if isReplay {
		s.outcome = replayed
	}
	return s
}

// checkWrites checks the writes' side of the contract: one change per
// operation_id (every answer names the same version or comment, applied
// once), and no two operation_ids sharing a change.
func (v *invariant) checkWrites(workers []workerResult) {
	first := map[string]string{}     // operation_id → ticket/result of its first success
	appliedOnce := map[string]bool{} // operation_ids answered replayed: false
	changes := map[string]struct{}{}
	for _, w := range workers {
		for _, c := range w.samples {
			if !c.write || (c.outcome != applied && c.outcome != replayed) {
				continue
			}
			op := w.writes[c.op]
			if c.opID != op.OperationID {
				v.EchoMismatches++
				v.example("sent operation_id " + op.OperationID + ", answer names " + c.opID)
			}
			change := op.tool + " " + c.ticketID + "/" + c.result
			if f, seen := first[op.OperationID]; !seen {
				first[op.OperationID] = change
			} else if f != change {
				v.ReplayMismatches++
				v.example("operation_id " + op.OperationID + ": " + f + " first, then " + change)
			}
			if c.outcome == applied {
				if appliedOnce[op.OperationID] {
					v.DuplicateWrites++
					v.example("operation_id " + op.OperationID + ": applied twice")
				}
				appliedOnce[op.OperationID] = true
			}
			changes[change] = struct{}{}
		}
	}
	v.WriteOps, v.DistinctChanges = len(first), len(changes)
	if v.WriteOps != v.DistinctChanges {
		v.example(strconv.Itoa(v.WriteOps) + " write operation_ids succeeded but " + strconv.Itoa(v.DistinctChanges) + " distinct changes came back")
	}
}
