package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The suite's fixtures: a 1x1 red PNG and a minimal WAV file.
var (
	testImage = mustBase64("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")
	testAudio = mustBase64("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
)

func mustBase64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(fmt.Sprintf("decode fixture: %v", err))
	}
	return b
}

// Input schemas of the tools.
var (
	noArgs       = json.RawMessage(`{"type":"object","properties":{}}`)
	promptArgs   = json.RawMessage(`{"type":"object","properties":{"prompt":{"type":"string","description":"The prompt to send to the LLM"}},"required":["prompt"]}`)
	messageArgs  = json.RawMessage(`{"type":"object","properties":{"message":{"type":"string","description":"The message to show the user"}},"required":["message"]}`)
	schema202012 = json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
		`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
		`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`)
)

// Elicitation schemas: one string answer; SEP-1034 defaults of every
// primitive type; SEP-1330 enum forms.
var (
	elicitResponse = json.RawMessage(`{"type":"object","properties":{"response":{"type":"string","description":"User's response"}},"required":["response"]}`)
	elicitDefaults = json.RawMessage(`{"type":"object","properties":{` +
		`"name":{"type":"string","description":"User name","default":"John Doe"},` +
		`"age":{"type":"integer","description":"User age","default":30},` +
		`"score":{"type":"number","description":"User score","default":95.5},` +
		`"status":{"type":"string","description":"User status","enum":["active","inactive","pending"],"default":"active"},` +
		`"verified":{"type":"boolean","description":"Verification status","default":true}},"required":[]}`)
	elicitEnums = json.RawMessage(`{"type":"object","properties":{` +
		`"untitledSingle":{"type":"string","description":"Select one option","enum":["option1","option2","option3"]},` +
		`"titledSingle":{"type":"string","description":"Select one option with titles","oneOf":[{"const":"value1","title":"First Option"},{"const":"value2","title":"Second Option"},{"const":"value3","title":"Third Option"}]},` +
		`"legacyEnum":{"type":"string","description":"Select one option (legacy)","enum":["opt1","opt2","opt3"],"enumNames":["Option One","Option Two","Option Three"]},` +
		`"untitledMulti":{"type":"array","description":"Select multiple options","minItems":1,"maxItems":3,"items":{"type":"string","enum":["option1","option2","option3"]}},` +
		`"titledMulti":{"type":"array","description":"Select multiple options with titles","minItems":1,"maxItems":3,"items":{"anyOf":[{"const":"value1","title":"First Choice"},{"const":"value2","title":"Second Choice"},{"const":"value3","title":"Third Choice"}]}}},"required":[]}`)
)

// step is the pause between the notifications of one call.
const step = 50 * time.Millisecond

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func (b *Backend) tool(name, description string, schema json.RawMessage, h mcp.ToolHandler) {
	b.srv.AddTool(&mcp.Tool{Name: b.name(name), Description: description, InputSchema: schema}, h)
}

func (b *Backend) addTools() {
	b.tool("test_simple_text", "Tests simple text content response", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("This is a simple text response for testing."), nil
		})
	b.tool("test_image_content", "Tests image content response", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: testImage, MIMEType: "image/png"}}}, nil
		})
	b.tool("test_audio_content", "Tests audio content response", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.AudioContent{Data: testAudio, MIMEType: "audio/wav"}}}, nil
		})
	b.tool("test_embedded_resource", "Tests embedded resource content response", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."}}}}, nil
		})
	b.tool("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{
				&mcp.TextContent{Text: "Multiple content types test:"},
				&mcp.ImageContent{Data: testImage, MIMEType: "image/png"},
				&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "test://mixed-content-resource",
					MIMEType: "application/json", Text: `{"test":"data","value":123}`}},
			}}, nil
		})
	b.tool("test_tool_with_logging", "Tests tool that emits log messages during execution", noArgs, withLogging)
	b.tool("test_tool_with_progress", "Tests tool that reports progress notifications", noArgs, withProgress)
	b.tool("test_error_handling", "Tests error response handling", noArgs,
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			r := text("This tool intentionally returns an error for testing")
			r.IsError = true
			return r, nil
		})
	b.tool("test_reconnection", "Tests SSE stream disconnection and client reconnection (SEP-1699). "+
		"Server will close the stream mid-call and send the result after client reconnects.", noArgs, b.reconnection)
	b.tool("test_sampling", "Tests server-initiated sampling (LLM completion request)", promptArgs, sampling)
	b.tool("test_elicitation", "Tests server-initiated elicitation (user input request)", messageArgs,
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var args struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(r.Params.Arguments, &args)
			return elicit(ctx, r, args.Message, elicitResponse, "User response"), nil
		})
	b.tool("test_elicitation_sep1034_defaults", "Tests elicitation with default values per SEP-1034", noArgs,
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, r, "Please review and update the form fields with defaults", elicitDefaults, "Elicitation completed"), nil
		})
	b.tool("test_elicitation_sep1330_enums", "Tests elicitation with enum schema improvements per SEP-1330", noArgs,
		func(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return elicit(ctx, r, "Please select options from the enum fields", elicitEnums, "Elicitation completed"), nil
		})
	b.tool("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)", schema202012,
		func(_ context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("JSON Schema 2020-12 tool called with: " + string(r.Params.Arguments)), nil
		})
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func withLogging(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i, msg := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx, step); err != nil {
				return nil, err
			}
		}
		if err := r.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Logger: serverName, Data: msg}); err != nil {
			return nil, fmt.Errorf("log %q: %w", msg, err)
		}
	}
	return text("Tool with logging executed successfully"), nil
}

func withProgress(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	token := r.Params.GetProgressToken()
	for i, p := range []float64{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, step); err != nil {
				return nil, err
			}
		}
		if token == nil {
			continue
		}
		if err := r.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p, Total: 100,
			Message: fmt.Sprintf("Completed step %v of 100", p)}); err != nil {
			return nil, fmt.Errorf("progress %v: %w", p, err)
		}
	}
	if token == nil {
		return text("no progress token"), nil
	}
	return text(fmt.Sprint(token)), nil
}

// reconnection closes the call's stream (asking the client to come back
// after RetryAfter) and answers a moment later, on the resumed stream.
func (b *Backend) reconnection(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if r.Extra != nil && r.Extra.CloseSSEStream != nil {
		r.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: b.opts.RetryAfter})
	}
	if err := pause(ctx, 100*time.Millisecond); err != nil {
		return nil, err
	}
	return text("Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure."), nil
}

func sampling(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Prompt string `json:"prompt"`
	}
	_ = json.Unmarshal(r.Params.Arguments, &args)
	res, err := r.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 100,
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: args.Prompt}}}})
	if err != nil {
		return text("Sampling not supported or error: " + err.Error()), nil
	}
	answer := "No response"
	if t, ok := res.Content.(*mcp.TextContent); ok && t.Text != "" {
		answer = t.Text
	}
	return text("LLM response: " + answer), nil
}

// elicit asks the client with schema and reports its answer; a refusal or
// an answer that does not fit the schema is reported in the text, as the
// suite's reference server does.
func elicit(ctx context.Context, r *mcp.CallToolRequest, message string, schema json.RawMessage, label string) *mcp.CallToolResult {
	res, err := r.Session.Elicit(ctx, &mcp.ElicitParams{Message: message, RequestedSchema: schema})
	if err != nil {
		return text("Elicitation not supported or error: " + err.Error())
	}
	content, _ := json.Marshal(res.Content)
	if res.Content == nil {
		content = []byte("{}")
	}
	return text(fmt.Sprintf("%s: action=%s, content=%s", label, res.Action, content))
}
