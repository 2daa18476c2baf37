// How many event streams one server keeps open per token and per tenant.

package httpapi

import (
	"fmt"
	"sync"

	"github.com/bettercompute/compute/core"
)

// streamSlots counts the open streams of one server per token and per
// tenant, and refuses one past either cap.
type streamSlots struct {
	limits StreamLimits

	mu       sync.Mutex
	byToken  map[string]int
	byTenant map[string]int
}

func newStreamSlots(l StreamLimits) *streamSlots {
	return &streamSlots{limits: l, byToken: map[string]int{}, byTenant: map[string]int{}}
}

// acquire takes a slot for actor's stream; release gives it back (once).
// The error's message is caller-safe.
func (s *streamSlots) acquire(actor core.Actor) (release func(), err error) {
	token := actor.TokenID
	if token == "" { // not an API token (never on /v1): count per identity
		token = "identity:" + actor.Identity
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byToken[token] >= s.limits.PerToken {
		return nil, fmt.Errorf("too many open event streams for this token (at most %d): close one, or retry later", s.limits.PerToken)
	}
	if s.byTenant[actor.Tenant] >= s.limits.PerTenant {
		return nil, fmt.Errorf("too many open event streams for this tenant (at most %d): close one, or retry later", s.limits.PerTenant)
	}
	s.byToken[token]++
	s.byTenant[actor.Tenant]++
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if s.byToken[token]--; s.byToken[token] == 0 {
				delete(s.byToken, token)
			}
			if s.byTenant[actor.Tenant]--; s.byTenant[actor.Tenant] == 0 {
				delete(s.byTenant, actor.Tenant)
			}
		})
	}, nil
}
