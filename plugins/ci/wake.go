package main

import (
	"strings"

	"github.com/vigilhq/vigil/plugins/internal/forge"
	"github.com/vigilhq/vigil/sdk"
)

// commitEvent is what the ci kind reads of a forge's CI event: the
// repository, the action, and the commit each event names its own way.
type commitEvent struct {
	Action      string           `json:"action"`
	Repository  forge.Repository `json:"repository"`
	CheckSuite  headSHA          `json:"check_suite"`
	CheckRun    headSHA          `json:"check_run"`
	WorkflowRun headSHA          `json:"workflow_run"`
	WorkflowJob headSHA          `json:"workflow_job"`
	// SHA and State are a commit status event's (status).
	SHA   string `json:"sha"`
	State string `json:"state"`
}

type headSHA struct {
	HeadSHA string `json:"head_sha"`
}

// wake names the commit a CI event is about, as admit keys a watch on it:
// for GitHub's check_suite, check_run, workflow_run and workflow_job once
// completed, and its status once not pending; for Gitea's status,
// workflow_run and workflow_job alike. One key for each forge API root
// the event's repository names (forge.Repository.Refs). An event that
// cannot settle a watch (a check queued or still running, a pending
// status) names none: waking on it would only cost a forge read.
func wake(e sdk.Event) ([]string, error) {
	var ev commitEvent
	if !e.DecodeBody(&ev) {
		return nil, nil
	}
	var sha string
	completed := ev.Action == "completed"
	switch e.Name {
	case "check_suite":
		sha = ev.CheckSuite.HeadSHA
	case "check_run":
		sha = ev.CheckRun.HeadSHA
	case "workflow_run":
		sha = ev.WorkflowRun.HeadSHA
	case "workflow_job":
		sha = ev.WorkflowJob.HeadSHA
	case "status":
		if ev.State == "" || ev.State == "pending" {
			return nil, nil
		}
		sha, completed = ev.SHA, true
	default:
		return nil, nil
	}
	if !completed || !isSHA(sha) {
		return nil, nil
	}
	var keys []string
	for _, ref := range ev.Repository.Refs(e.Source) {
		keys = append(keys, commitKey(ref, sha))
	}
	return keys, nil
}

// commitKey is the partition key of a watch on the commit sha of ref:
// admit's and wake's alike.
func commitKey(ref forge.Ref, sha string) string {
	return ref.PartitionKey("/commits/" + strings.ToLower(sha))
}
