package search_test

import (
	"encoding/json"
	"fmt"

	"github.com/fleetgate/fleetgate/pkg/search"
)

func Example() {
	docs := []search.Doc{
		{
			Name:        "github_create_issue",
			Title:       "Create issue",
			Description: "Create a new issue in a GitHub repository.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"repo":{"type":"string","description":"Repository name"},
				"title":{"type":"string","description":"Issue title"}}}`),
		},
		{
			Name:        "slack_post_message",
			Title:       "Post message",
			Description: "Post a message to a Slack channel.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{
				"channel_id":{"type":"string"},"text":{"type":"string"}}}`),
		},
		{
			Name:        "fs_list_directory",
			Description: "List the files and subdirectories in a directory.",
		},
	}
	ix := search.Build(docs, nil)

	for _, q := range []string{
		"open a bug report on the repo",
		"send a note to the team channel",
		"what is in this folder",
	} {
		hits := ix.Search(q, 1)
		fmt.Printf("%-32s -> %s\n", q, hits[0].Name)
	}
	// Output:
	// open a bug report on the repo    -> github_create_issue
	// send a note to the team channel  -> slack_post_message
	// what is in this folder           -> fs_list_directory
}
