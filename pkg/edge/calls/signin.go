package calls

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	goauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetgate/fleetgate/pkg/catalog"
	"github.com/fleetgate/fleetgate/pkg/credential"
	"github.com/fleetgate/fleetgate/pkg/edge/backend"
	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
	"github.com/fleetgate/fleetgate/pkg/signin"
)

// Backends with `auth: {type: user_oauth}` act for each user, who signs
// in to them once (package signin). Until a caller has signed in to one,
// its tools, prompts and resources are absent from the caller's lists,
// replaced by one tool <backend><separator>sign_in (or nothing, with
// before_sign_in: hidden); a call to that tool, or to any tool of the
// backend, answers the authorization URL: as a URLElicitationRequired
// error (-32042) to a client that declared URL elicitation, else as an
// error result carrying it. Once signed in, the caller sees the
// backend's tools and <backend><separator>sign_out. The lists of one
// caller are cached per served view and sign-in state.

// SignIns is the edge's sign-ins (a *signin.Manager).
type SignIns interface {
	SignedIn(identity, backend string) bool
	Begin(ctx context.Context, identity, backend, backendURL string, a *credential.Auth, elicitation string) (string, error)
	SignOut(ctx context.Context, identity, backend string) error
	// ResumeState, Resumed and Wait serve the 2026-07-28 clients' retries
	// (signinresume.go).
	ResumeState(identity, backend, elicitation string) (string, error)
	Resumed(state, identity, backend string) bool
	Wait(ctx context.Context, identity, backend string) bool
}

// Names of the sign-in tools after a backend's name and the separator.
const (
	SignInTool  = "sign_in"
	SignOutTool = "sign_out"
)

// errSignInNeeded is the trail's error of a call made before sign-in.
var errSignInNeeded = errors.New("the caller has not signed in to the backend")

// signInViews caches the overlaid views (view, sign-in state) -> view.
type signInViews struct {
	mu    sync.Mutex
	views map[signInKey]*view.Served
	// offered are, by the caller's view (policy applied), the user_oauth
	// backends of which it keeps a tool: only those offer their sign-in.
	offered map[*view.Served][]string
}

type signInKey struct {
	sv    *view.Served
	state string // one byte per user_oauth backend of sv, sorted by name
}

// maxSignInViews bounds the overlaid views kept (few distinct states
// exist per view).
const maxSignInViews = 1024

// callerIdentity is the sign-in identity of a verified caller ("" for
// none): its token's issuer and subject.
func callerIdentity(ti *goauth.TokenInfo) string {
	if id := TokenIdentity(ti); id != nil {
		return id.Issuer + " " + id.Subject
	}
	return ""
}

// signInBackends are the user_oauth backends of sv (the caller's view,
// its policy applied) of which sv keeps a tool, sorted: a backend the
// policy denies the caller entirely offers no sign-in either.
func (pl *Plane) signInBackends(sv *view.Served) []string {
	c := &pl.signIns
	c.mu.Lock()
	out, ok := c.offered[sv]
	c.mu.Unlock()
	if ok {
		return out
	}
	some := false
	for _, cfg := range sv.Backends {
		some = some || cfg.Auth.SignIn()
	}
	if some {
		kept := map[string]bool{}
		for name := range sv.Tools {
			if b := sv.OwnerOf(policy.KindTool, name); !kept[b] && sv.Backends[b].Auth.SignIn() {
				kept[b] = true
				out = append(out, b)
			}
		}
		slices.Sort(out)
	}
	c.mu.Lock()
	if c.offered == nil || len(c.offered) >= maxSignInViews {
		c.offered = map[*view.Served][]string{}
	}
	c.offered[sv] = out
	c.mu.Unlock()
	return out
}

// signInView is sv (the caller's, policy applied) as the caller ti sees
// it given its sign-ins.
func (pl *Plane) signInView(sv *view.Served, ti *goauth.TokenInfo) *view.Served {
	if pl.o.SignIns == nil {
		return sv
	}
	names := pl.signInBackends(sv)
	if len(names) == 0 {
		return sv
	}
	identity := callerIdentity(ti)
	state := make([]byte, len(names))
	for i, b := range names {
		state[i] = '0'
		if identity != "" && pl.o.SignIns.SignedIn(identity, b) {
			state[i] = '1'
		}
	}
	k := signInKey{sv: sv, state: string(state)}
	c := &pl.signIns
	c.mu.Lock()
	f, ok := c.views[k]
	c.mu.Unlock()
	if ok {
		return f
	}
	out := map[string]bool{}
	var extra []*mcp.Tool
	for i, b := range names {
		switch {
		case state[i] == '1':
			extra = append(extra, pl.signInToolDef(b, SignOutTool, "Sign out of "+b+": its tools act for you no more, until you sign in again."))
		case sv.Backends[b].Auth.HiddenBeforeSignIn():
			out[b] = true
		default:
			out[b] = true
			extra = append(extra, pl.signInToolDef(b, SignInTool, "Sign in to "+b+" to use its tools: answers the URL to open in a browser."))
		}
	}
	f = sv.Overlay(func(k policy.Kind, name string) bool { return !out[sv.OwnerOf(k, name)] }, extra)
	c.mu.Lock()
	if c.views == nil || len(c.views) >= maxSignInViews {
		c.views = map[signInKey]*view.Served{}
	}
	c.views[k] = f
	c.mu.Unlock()
	return f
}

func (pl *Plane) signInToolDef(backend, what, desc string) *mcp.Tool {
	return &mcp.Tool{Name: backend + pl.o.Separator + what, Description: desc,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}}
}

// signInCall answers call c when it is a sign-in tool of a user_oauth
// backend of sv, and records it in the call trail (an error by its kind
// only: the reply's text may carry the authorization URL); handled is
// false otherwise.
func (pl *Plane) signInCall(ctx context.Context, sv *view.Served, c Call, start time.Time) (reply backend.Reply, handled bool) {
	if pl.o.SignIns == nil {
		return reply, false
	}
	x := &mcp.RequestExtra{TokenInfo: c.TokenInfo, Header: http.Header{}}
	if pl.o.IdentityHeader != "" && c.Ident != "" {
		x.Header.Set(pl.o.IdentityHeader, c.Ident)
	}
	for _, b := range pl.signInBackends(pl.policyView(sv, x)) { // the caller's, as Resolve judges it
		var what string
		switch c.Name {
		case b + pl.o.Separator + SignInTool:
			what = SignInTool
			var ok bool
			if reply, ok = pl.needSignIn(ctx, c, b, sv.Backends[b].URL, sv.Backends[b].Auth, false); !ok {
				reply = textReply(fmt.Sprintf("You are signed in to %s already.", b), false)
			}
		case b + pl.o.Separator + SignOutTool:
			what = SignOutTool
			reply = pl.signOut(ctx, c, b)
		default:
			continue
		}
		if pl.o.Trail != nil {
			var failure error
			if reply.Res.IsError {
				failure = fmt.Errorf("tool %q: backend %q: %w", c.Name, b, errSignInFailed)
			}
			rt := Route{Tool: catalog.ToolEntry{Exposed: c.Name, Backend: b, Original: what}, Config: sv.Backends[b], Gen: pl.o.Generation(sv)}
			pl.Audit(c, rt, start, &reply, failure)
		}
		return reply, true
	}
	return reply, false
}

// errSignInFailed is the trail's error of a sign-in tool's failure.
var errSignInFailed = errors.New("sign-in tool failed")

// signOut ends c's caller's sign-in to backend b.
func (pl *Plane) signOut(ctx context.Context, c Call, b string) backend.Reply {
	identity := callerIdentity(c.TokenInfo)
	if identity == "" || !pl.o.SignIns.SignedIn(identity, b) {
		return textReply(fmt.Sprintf("You are not signed in to %s.", b), false)
	}
	if err := pl.o.SignIns.SignOut(ctx, identity, b); err != nil {
		pl.o.Log.Warn().Str("backend", b).Err(err).Msg("sign-out failed")
		return textReply(fmt.Sprintf("Sign-out of %s failed; try again.", b), true)
	}
	return textReply(fmt.Sprintf("Signed out of %s.", b), false)
}

// needSignIn is the reply to a call of c's caller to backend b (at url,
// configured a) when the caller has not signed in to it: the
// authorization URL, as an error result to a call of one of b's tools
// (elicit; a URL elicitation to a client that takes them), as the result
// of the sign_in tool otherwise. ok is false when the caller has signed
// in.
func (pl *Plane) needSignIn(ctx context.Context, c Call, b, url string, a *credential.Auth, elicit bool) (backend.Reply, bool) {
	identity := callerIdentity(c.TokenInfo)
	ask := elicit && c.URLElicitation
	if identity != "" {
		switch pl.resumeSignIn(ctx, c, identity, b) {
		case resumedSignedIn:
			return backend.Reply{}, false
		case resumedPending: // the sign-in URL again, as text
			ask = false
		}
	}
	if identity != "" && pl.o.SignIns.SignedIn(identity, b) {
		return backend.Reply{}, false
	}
	if identity == "" {
		return textReply(fmt.Sprintf("backend %q needs each user to sign in, which needs a verified caller (a bearer token; the edge needs --auth-issuer)", b), true), true
	}
	elicitation := ""
	if ask {
		elicitation = "signin-" + rand.Text()
	}
	authURL, err := pl.o.SignIns.Begin(ctx, identity, b, url, a, elicitation)
	if errors.Is(err, signin.ErrNoLogin) {
		return textReply(fmt.Sprintf("backend %q: per-user sign-in is disabled on this edge: the operator has not configured how to check who completes a sign-in (--signin-client-id)", b), true), true
	}
	if err != nil {
		pl.o.Log.Warn().Str("backend", b).Err(err).Msg("sign-in could not begin")
		return textReply(fmt.Sprintf("backend %q: sign-in unavailable: its authorization server could not be reached or is unusable", b), true), true
	}
	if elicitation != "" && c.Stateless != nil { // a client of 2026-07-28 (signinresume.go)
		if reply, err := pl.signInInput(identity, b, authURL, elicitation); err == nil {
			return reply, true
		}
	}
	if elicitation != "" {
		je := mcp.URLElicitationRequiredError([]*mcp.ElicitParams{{Mode: "url", URL: authURL,
			ElicitationID: elicitation,
			Message:       fmt.Sprintf("Sign in to %s to use its tools.", b)}})
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Sign in to %s: open %s", b, authURL)}}}
		res.SetError(je)
		return backend.Reply{Res: res}, true
	}
	return textReply(fmt.Sprintf("Sign in to %s: open this URL in a browser, then list the tools again:\n%s", b, authURL), elicit), true
}

func textReply(text string, isError bool) backend.Reply {
	return backend.Reply{Res: &mcp.CallToolResult{IsError: isError, Content: []mcp.Content{&mcp.TextContent{Text: text}}}}
}

// SignInError is the URLElicitationRequired error a call's reply carries
// (needSignIn), nil for any other reply: the session server answers it as
// that JSON-RPC error.
func SignInError(reply backend.Reply) *jsonrpc.Error {
	if reply.Res == nil {
		return nil
	}
	var je *jsonrpc.Error
	if errors.As(reply.Res.GetError(), &je) && je.Code == mcp.CodeURLElicitationRequired {
		return je
	}
	return nil
}

// PerCallerLists reports whether the lists served now differ by caller
// for their sign-ins (a user_oauth backend is served).
func (pl *Plane) PerCallerLists() bool {
	if pl.o.SignIns == nil {
		return false
	}
	for _, cfg := range pl.o.View().Backends {
		if cfg.Auth.SignIn() {
			return true
		}
	}
	return false
}
