package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources the suite reads and subscribes to.
const (
	uriStaticText    = "test://static-text"
	uriStaticBinary  = "test://static-binary"
	uriWatched       = "test://watched-resource"
	uriTemplate      = "test://template/{id}/data"
	templatePrefix   = "test://template/"
	templateSuffix   = "/data"
	maxTemplateIDLen = 256
)

func (b *Backend) addResources() {
	b.srv.AddResource(&mcp.Resource{URI: uriStaticText, Name: "static-text", Title: "Static Text Resource",
		Description: "A static text resource for testing", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uriStaticText, MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}}, nil
		})
	b.srv.AddResource(&mcp.Resource{URI: uriStaticBinary, Name: "static-binary", Title: "Static Binary Resource",
		Description: "A static binary resource (image) for testing", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uriStaticBinary, MIMEType: "image/png",
				Blob: testImage}}}, nil
		})
	b.srv.AddResource(&mcp.Resource{URI: uriWatched, Name: "watched-resource", Title: "Watched Resource",
		Description: "A resource clients subscribe to", MIMEType: "text/plain"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uriWatched, MIMEType: "text/plain",
				Text: "Watched resource content"}}}, nil
		})
	b.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: uriTemplate, Name: "template", Title: "Resource Template",
		Description: "A resource template with parameter substitution", MIMEType: "application/json"}, readTemplate)
}

// readTemplate answers test://template/{id}/data with the id in the text.
func readTemplate(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := r.Params.URI
	id, ok := strings.CutPrefix(uri, templatePrefix)
	if ok {
		id, ok = strings.CutSuffix(id, templateSuffix)
	}
	if !ok || id == "" || len(id) > maxTemplateIDLen || strings.Contains(id, "/") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	body, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
	if err != nil {
		return nil, fmt.Errorf("read template %q: %w", uri, err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

func userText(s string) *mcp.PromptMessage {
	return &mcp.PromptMessage{Role: "user", Content: &mcp.TextContent{Text: s}}
}

func (b *Backend) addPrompts() {
	b.srv.AddPrompt(&mcp.Prompt{Name: b.name("test_simple_prompt"), Title: "Simple Test Prompt",
		Description: "A simple prompt without arguments"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{userText("This is a simple prompt for testing.")}}, nil
		})
	b.srv.AddPrompt(&mcp.Prompt{Name: b.name("test_prompt_with_arguments"), Title: "Prompt With Arguments",
		Description: "A prompt with required arguments", Arguments: []*mcp.PromptArgument{
			{Name: "arg1", Description: "First test argument", Required: true},
			{Name: "arg2", Description: "Second test argument", Required: true},
		}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			a := r.Params.Arguments
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				userText(fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", a["arg1"], a["arg2"]))}}, nil
		})
	b.srv.AddPrompt(&mcp.Prompt{Name: b.name("test_prompt_with_embedded_resource"), Title: "Prompt With Embedded Resource",
		Description: "A prompt that includes an embedded resource", Arguments: []*mcp.PromptArgument{
			{Name: "resourceUri", Description: "URI of the resource to embed", Required: true},
		}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: r.Params.Arguments["resourceUri"],
					MIMEType: "text/plain", Text: "Embedded resource content for testing."}}},
				userText("Please process the embedded resource above."),
			}}, nil
		})
	b.srv.AddPrompt(&mcp.Prompt{Name: b.name("test_prompt_with_image"), Title: "Prompt With Image",
		Description: "A prompt that includes image content"},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
				{Role: "user", Content: &mcp.ImageContent{Data: testImage, MIMEType: "image/png"}},
				userText("Please analyze the image above."),
			}}, nil
		})
}
