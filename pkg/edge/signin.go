package edge

import (
	"github.com/fleetgate/fleetgate/pkg/edge/signins"
	"github.com/fleetgate/fleetgate/pkg/events"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// SignInOptions make the edge keep per-user sign-ins to user_oauth
// backends (Options.SignIns): package signin keeps the sign-ins, package
// signins serves the callback and the revocation.
type SignInOptions = signins.EdgeOptions

// openSignIns opens the sign-ins of e and their web side (both nil
// without Options.SignIns).
func openSignIns(e *Edge) (*signin.Manager, *signins.Web) {
	if e.opts.SignIns == nil {
		return nil, nil
	}
	return signins.Open(e.opts.SignIns, e.mcpLn.Addr().String(), signins.Options{Sessions: e.reg, Log: e.log, Fleet: e.bearer.Fleet(),
		Owner: e.opts.OwnerKey.Hash, Outcomes: e.m.signIns, Changes: e.m.signInChanges, Dropped: e.m.notifyDropped,
		StoreFailures: e.m.signInStoreFailures, Unsaved: e.m.signInUnsaved,
		Backend: func(name string) (events.BackendConfig, bool) {
			cfg, ok := (*e.backends.Load())[name]
			return cfg, ok
		}})
}
