package mcp

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// complete answers completion/complete, which suggests values for an
// argument of a prompt (ref/prompt) or of a resource template
// (ref/resource). The endpoint serves no prompt; its one template's
// variables are the ids of a task and its artifact, which the results
// that name them give, and which a list of the caller's would only repeat;
// MCP completes no tool arguments (a tool's enum is in its input schema
// already). So there is never a value to suggest: the answer is an empty
// list, which the specification allows, rather than an error for a
// capability the client may find declared by other servers.
func complete(context.Context, *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}, nil
}
