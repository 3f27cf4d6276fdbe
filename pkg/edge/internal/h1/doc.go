// Package h1 holds the edge's hand-written HTTP/1.1 pieces. It knows
// nothing of MCP.
package h1
