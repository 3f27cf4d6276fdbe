package conformance

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is a go-sdk client session to a started backend that records
// the log and progress notifications it gets and answers sampling and
// elicitation like the suite does.
type client struct {
	cs       *mcp.ClientSession
	mu       sync.Mutex
	logs     []string
	progress []float64
	elicited []*mcp.ElicitParams
}

func start(t *testing.T, o *Options) *Backend {
	t.Helper()
	b := New(o)
	if err := b.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	return b
}

func connect(t *testing.T, ctx context.Context, url string, elicitContent map[string]any) *client {
	t.Helper()
	c := &client{}
	mc := mcp.NewClient(&mcp.Implementation{Name: "conformance-test-client", Version: "1.0.0"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.logs = append(c.logs, string(r.Params.Level)+":"+r.Params.Data.(string))
		},
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, r.Params.Progress)
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "test-model", StopReason: "endTurn",
				Content: &mcp.TextContent{Text: "This is a test response from the client"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			c.mu.Lock()
			c.elicited = append(c.elicited, r.Params)
			c.mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: elicitContent}, nil
		},
	})
	cs, err := mc.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	c.cs = cs
	return c
}

func textOf(t *testing.T, r *mcp.CallToolResult) string {
	t.Helper()
	if len(r.Content) == 0 {
		t.Fatalf("no content: %+v", r)
	}
	tc, ok := r.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("first content is %T, want text", r.Content[0])
	}
	return tc.Text
}

func TestToolsAnswerAsTheSuiteExpects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, start(t, nil).URL(), map[string]any{"response": "yes"})
	for _, tc := range []struct {
		tool  string
		args  map[string]any
		check func(*mcp.CallToolResult) string // "" when right
	}{
		{"test_simple_text", nil, func(r *mcp.CallToolResult) string {
			return want(textOf(t, r) == "This is a simple text response for testing.", "text")
		}},
		{"test_image_content", nil, func(r *mcp.CallToolResult) string {
			im, ok := r.Content[0].(*mcp.ImageContent)
			return want(ok && im.MIMEType == "image/png" && string(im.Data[1:4]) == "PNG", "a PNG image")
		}},
		{"test_audio_content", nil, func(r *mcp.CallToolResult) string {
			au, ok := r.Content[0].(*mcp.AudioContent)
			return want(ok && au.MIMEType == "audio/wav" && string(au.Data[:4]) == "RIFF", "a WAV file")
		}},
		{"test_embedded_resource", nil, func(r *mcp.CallToolResult) string {
			er, ok := r.Content[0].(*mcp.EmbeddedResource)
			return want(ok && er.Resource.URI == "test://embedded-resource" && er.Resource.Text != "", "an embedded resource")
		}},
		{"test_multiple_content_types", nil, func(r *mcp.CallToolResult) string {
			return want(len(r.Content) == 3, "text, image and resource")
		}},
		{"test_error_handling", nil, func(r *mcp.CallToolResult) string {
			return want(r.IsError && strings.Contains(textOf(t, r), "intentionally"), "an isError result")
		}},
		{"test_sampling", map[string]any{"prompt": "hi"}, func(r *mcp.CallToolResult) string {
			return want(textOf(t, r) == "LLM response: This is a test response from the client", "the client's sampling answer")
		}},
		{"test_elicitation", map[string]any{"message": "tell"}, func(r *mcp.CallToolResult) string {
			return want(textOf(t, r) == `User response: action=accept, content={"response":"yes"}`, "the client's elicitation answer")
		}},
		{"test_reconnection", nil, func(r *mcp.CallToolResult) string {
			return want(strings.HasPrefix(textOf(t, r), "Reconnection test completed"), "the answer after the stream was resumed")
		}},
		{"json_schema_2020_12_tool", map[string]any{"name": "n"}, func(r *mcp.CallToolResult) string {
			return want(strings.Contains(textOf(t, r), `"name":"n"`), "the arguments echoed")
		}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			r, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(r); msg != "" {
				t.Fatalf("%s: want %s, got %+v", tc.tool, msg, r)
			}
		})
	}
}

func want(ok bool, what string) string {
	if ok {
		return ""
	}
	return what
}

func TestLoggingWithoutSetLevelAndProgressWithToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, start(t, nil).URL(), nil)
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParams{Name: "test_tool_with_progress"}
	p.SetProgressToken("progress-test-1")
	r, err := c.cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, r); got != "progress-test-1" {
		t.Fatalf("progress tool saw token %q", got)
	}
	// Notifications are handled apart from the result: wait for them.
	var logs []string
	var progress []float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		c.mu.Lock()
		logs, progress = slices.Clone(c.logs), slices.Clone(c.progress)
		c.mu.Unlock()
		if len(logs) >= 3 && len(progress) >= 3 {
			break
		}
	}
	if want := []string{"info:Tool execution started", "info:Tool processing data", "info:Tool execution completed"}; !slices.Equal(logs, want) {
		t.Fatalf("logs %q, want %q", logs, want)
	}
	if !slices.Equal(progress, []float64{0, 50, 100}) {
		t.Fatalf("progress %v, want 0, 50, 100", progress)
	}

	// A level the client sets wins over the default: info is dropped at error.
	if err := c.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "error"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging"}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.logs) != 3 {
		t.Fatalf("after setLevel error: %d log messages, want still 3", len(c.logs))
	}
}

func TestElicitationSchemas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, start(t, nil).URL(), map[string]any{"name": "Jane Smith", "age": 25, "verified": false})
	r, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation_sep1034_defaults"})
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, r); !strings.HasPrefix(got, "Elicitation completed: action=accept") {
		t.Fatalf("sep1034: %q", got)
	}
	// The enum answer does not fit the schema: the error is in the text,
	// the request was made all the same (which is what the suite checks).
	if _, err := c.cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation_sep1330_enums"}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.elicited) != 2 {
		t.Fatalf("%d elicitations, want 2", len(c.elicited))
	}
	var defaults, enums struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	for i, into := range []any{&defaults, &enums} {
		b, _ := json.Marshal(c.elicited[i].RequestedSchema)
		if err := json.Unmarshal(b, into); err != nil {
			t.Fatal(err)
		}
	}
	if defaults.Properties["name"]["default"] != "John Doe" || defaults.Properties["score"]["default"] != 95.5 ||
		defaults.Properties["verified"]["default"] != true {
		t.Fatalf("sep1034 defaults: %v", defaults.Properties)
	}
	if enums.Properties["legacyEnum"]["enumNames"] == nil || enums.Properties["titledSingle"]["oneOf"] == nil ||
		enums.Properties["titledMulti"]["type"] != "array" {
		t.Fatalf("sep1330 enums: %v", enums.Properties)
	}
}

func TestPromptsResourcesCompletionsSubscriptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b := start(t, nil)
	c := connect(t, ctx, b.URL(), nil)
	p, err := c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments",
		Arguments: map[string]string{"arg1": "testValue1", "arg2": "testValue2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Messages[0].Content.(*mcp.TextContent).Text; got != "Prompt with arguments: arg1='testValue1', arg2='testValue2'" {
		t.Fatalf("prompt: %q", got)
	}
	p, err = c.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_embedded_resource",
		Arguments: map[string]string{"resourceUri": "test://example-resource"}})
	if err != nil || p.Messages[0].Content.(*mcp.EmbeddedResource).Resource.URI != "test://example-resource" {
		t.Fatalf("embedded prompt: %v %+v", err, p)
	}
	for _, tc := range []struct{ uri, mime, text string }{
		{"test://static-text", "text/plain", "This is the content of the static text resource."},
		{"test://static-binary", "image/png", ""},
		{"test://template/123/data", "application/json", `{"data":"Data for ID: 123","id":"123","templateTest":true}`},
	} {
		r, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: tc.uri})
		if err != nil {
			t.Fatalf("read %s: %v", tc.uri, err)
		}
		got := r.Contents[0]
		if got.URI != tc.uri || got.MIMEType != tc.mime || got.Text != tc.text || (tc.text == "") != (len(got.Blob) > 0) {
			t.Fatalf("read %s: %+v", tc.uri, got)
		}
	}
	for _, bad := range []string{"test://template//data", "test://template/a/b/data", "test://template/1/other"} {
		if _, err := c.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bad}); err == nil {
			t.Fatalf("read %s: no error", bad)
		}
	}
	cr, err := c.cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "test"}})
	if err != nil || cr.Completion.Values == nil {
		t.Fatalf("complete: %v %+v", err, cr)
	}
	if err := c.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	if n := b.Subscribed("test://watched-resource"); n != 1 {
		t.Fatalf("subscribed %d, want 1", n)
	}
	if err := c.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatal(err)
	}
	if n := b.Subscribed("test://watched-resource"); n != 0 {
		t.Fatalf("subscribed %d after unsubscribe, want 0", n)
	}
}

func TestTrimPrefix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := connect(t, ctx, start(t, &Options{TrimPrefix: "test_"}).URL(), nil)
	var tools, prompts []string
	for tl, err := range c.cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tl.Name)
	}
	for p, err := range c.cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(tools, "simple_text") || !slices.Contains(tools, "json_schema_2020_12_tool") || slices.Contains(tools, "test_simple_text") {
		t.Fatalf("tools %v", tools)
	}
	if !slices.Contains(prompts, "prompt_with_arguments") || len(prompts) != 4 {
		t.Fatalf("prompts %v", prompts)
	}
	if len(tools) != 14 {
		t.Fatalf("%d tools, want 14", len(tools))
	}
}
