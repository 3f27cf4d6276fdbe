package calls

import (
	goauth "github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// ParamBindings are the Mcp-Param-* bindings of the exposed tool name
// (catalog.View.ToolBindings) for the caller (ti, ident): none for a tool
// the policy hides from the caller, whose call must look like one of an
// unknown tool, not be checked against headers that would name its
// parameters.
func (pl *Plane) ParamBindings(ti *goauth.TokenInfo, ident, name string) []catalog.ParamBinding {
	cur := pl.o.View().Era(view.FirstStateless) // checked on calls of that generation only
	b := cur.Catalog.ToolBindings(name)
	if len(b) == 0 {
		return nil
	}
	if ok, _ := pl.Allowed(cur, ti, ident, policy.KindTool, name); !ok {
		return nil
	}
	return b
}
