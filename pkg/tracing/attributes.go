package tracing

import "go.opentelemetry.io/otel/attribute"

// Attribute keys of fleetgate's spans: the OpenTelemetry conventions for
// MCP (mcp.*, gen_ai.*) and network, plus fleetgate's own.
const (
	AttrMethod     = attribute.Key("mcp.method.name")
	AttrSession    = attribute.Key("mcp.session.id")
	AttrProtocol   = attribute.Key("mcp.protocol.version")
	AttrTool       = attribute.Key("gen_ai.tool.name")
	AttrOperation  = attribute.Key("gen_ai.operation.name")
	AttrTransport  = attribute.Key("network.transport")
	AttrProtoName  = attribute.Key("network.protocol.name")
	AttrErrorType  = attribute.Key("error.type")
	AttrBackend    = attribute.Key("fleetgate.backend")
	AttrGeneration = attribute.Key("fleetgate.view.generation")
	AttrEdge       = attribute.Key("fleetgate.edge")
	AttrSessions   = attribute.Key("fleetgate.sessions")
	AttrEventGen   = attribute.Key("fleetgate.generation")
)
