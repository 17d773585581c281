package mcptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigilhq/vigil/api"
)

// CallTool calls a tool and decodes its structured content into out (when
// out is not nil); it fails the test on a protocol error.
func CallTool(t testing.TB, s *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: a protocol error: %v", name, err)
	}
	if out != nil {
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: structured content %s: %v", name, b, err)
		}
	}
	return res
}

// ToolErr is a tool error's content, the API's envelope; it fails the
// test when res is no tool error, carries no envelope, or its text does
// not name its code.
func ToolErr(t testing.TB, res *mcp.CallToolResult) api.Error {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not a tool error: %+v", res)
	}
	var env api.ErrorEnvelope
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &env); err != nil || env.Error.Code == "" {
		t.Fatalf("a tool error without the API's envelope: %s", b)
	}
	if len(res.Content) == 0 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, env.Error.Code) {
		t.Errorf("the error's text does not name its code %s: %+v", env.Error.Code, res.Content)
	}
	return env.Error
}
