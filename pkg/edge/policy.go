package edge

import (
	"time"

	"github.com/fleetgate/fleetgate/pkg/edge/view"
	"github.com/fleetgate/fleetgate/pkg/policy"
)

// applyPolicy makes p the policy in force (the one of state just applied)
// and, when it differs from the previous one, tells every session whose
// visible lists changed: each kind whose visible names differ for the
// session's subject (every kind for a session that has not listed yet,
// and for the listen streams of the shared stateless server).
func (e *Edge) applyPolicy(p *policy.Policy, at time.Time) {
	old := e.calls.SetPolicy(p)
	if old == p {
		return
	}
	if err := e.limits.update(p); err != nil { // validated by the policy: not expected
		e.log.Error().Err(err).Msg("rate limits of the policy refused; the previous ones stay")
	}
	e.log.Info().Uint64("policy_generation", p.Generation()).Msg("tool policy applied")
	cur := e.current()
	targets := e.reg.All()
	all := view.Change{Tools: true, Prompts: true, Resources: true}
	items := cur.Items()
	for _, s := range targets {
		c := all
		if sub := s.Subject(); sub != nil {
			was, now := e.calls.Visibility(old, *sub, items), e.calls.Visibility(p, *sub, items)
			c = view.Change{Tools: !policy.SameNames(was, now, policy.KindTool),
				Prompts:   !policy.SameNames(was, now, policy.KindPrompt),
				Resources: !policy.SameNames(was, now, policy.KindResource)}
		}
		if s.Notify(c, at) {
			e.m.notifyDropped.Inc()
		}
	}
}
