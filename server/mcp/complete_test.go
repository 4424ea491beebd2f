package mcp_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/caddy-a2a/caddy-a2a/server/servertest"
)

// What the endpoint declares (initialize, or server/discover at
// 2026-07-28) it answers: prompts/list, with none, completion/complete,
// with no values, as it serves no prompt and completes no task ids, and
// resources (resources_test.go).
func TestMCPDeclaresWhatItAnswers(t *testing.T) {
	a := servertest.NewAgent(t, withMCP)
	for _, version := range mcpVersions {
		t.Run(version, func(t *testing.T) {
			cs := connectMCP(t, a, version, "", nil)
			caps := cs.InitializeResult().Capabilities
			if caps.Prompts == nil || caps.Completions == nil || caps.Resources == nil {
				t.Errorf("capabilities %+v: want prompts, completions and resources", caps)
			}
			prompts, err := cs.ListPrompts(t.Context(), nil)
			if err != nil || len(prompts.Prompts) != 0 {
				t.Errorf("prompts/list: %v, %+v", err, prompts)
			}
			for _, ref := range []*mcp.CompleteReference{{Type: "ref/prompt", Name: "any"}, {Type: "ref/resource", URI: "file:///x"}} {
				res, err := cs.Complete(t.Context(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "a", Value: "p"}})
				if err != nil || res.Completion.Values == nil || len(res.Completion.Values) != 0 {
					t.Errorf("completion/complete of %s: %v, %+v", ref.Type, err, res)
				}
			}
		})
	}
}
