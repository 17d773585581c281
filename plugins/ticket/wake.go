package main

import (
	"strconv"

	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/sdk"
)

// ticketEvent is what the ticket kind reads of a forge's issue or pull
// request event: the repository and the number.
type ticketEvent struct {
	Repository  forge.Repository `json:"repository"`
	Issue       number           `json:"issue"`
	PullRequest number           `json:"pull_request"`
	// Number is a pull request event's own (GitHub's and Gitea's).
	Number int `json:"number"`
}

type number struct {
	Number int `json:"number"`
}

// wake names the issue or pull request an event is about, as admit keys a
// watch on it (a pull request is an issue of its number): GitHub's
// issues, issue_comment, pull_request and pull_request_review, and
// Gitea's issues, issue_comment, pull_request, pull_request_approved and
// pull_request_rejected (its reviews). One key for each forge API root
// the event's repository names. Every action: a ticket watch is standing,
// and observe decides whether the change is one a person made.
func wake(e sdk.Event) ([]string, error) {
	var ev ticketEvent
	if !e.DecodeBody(&ev) {
		return nil, nil
	}
	var n int
	switch e.Name {
	case "issues", "issue_comment":
		n = ev.Issue.Number
	case "pull_request", "pull_request_review", "pull_request_approved", "pull_request_rejected":
		n = ev.PullRequest.Number
		if n == 0 {
			n = ev.Number
		}
	default:
		return nil, nil
	}
	if n < 1 || n > 1<<31-1 {
		return nil, nil
	}
	var keys []string
	for _, ref := range ev.Repository.Refs(e.Source) {
		keys = append(keys, issueKey(ref, n))
	}
	return keys, nil
}

// issueKey is the partition key of a watch on issue n of ref: admit's
// and wake's alike.
func issueKey(ref forge.Ref, n int) string {
	return ref.PartitionKey("/issues/" + strconv.Itoa(n))
}
