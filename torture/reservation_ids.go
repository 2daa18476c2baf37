package torture

import (
	"math/rand/v2"
	"sync"
)

// reservationIDs are the reservations each tenant created, so that
// extends, releases and cancels mostly hit the caller's own.
type reservationIDs struct {
	mu sync.Mutex
	m  map[string][]string
}

func newReservationIDs() *reservationIDs { return &reservationIDs{m: map[string][]string{}} }

func (r *reservationIDs) add(tenant, id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[tenant] = append(r.m[tenant], id)
}

// recent bounds the choice to a tenant's newest reservations: old ones
// have ended, and calls on them would only confirm it.
const recent = 64

// random picks one of the tenant's recent reservations (own) or, one time
// in ten, another tenant's.
func (r *reservationIDs) random(rnd *rand.Rand, tenant string) (id string, own, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rnd.IntN(10) == 0 {
		for tn, ids := range r.m {
			if tn != tenant && len(ids) > 0 {
				return ids[rnd.IntN(len(ids))], false, true
			}
		}
	}
	ids := r.m[tenant]
	if len(ids) == 0 {
		return "", false, false
	}
	ids = ids[max(0, len(ids)-recent):]
	return ids[rnd.IntN(len(ids))], true, true
}

// all returns every reservation each tenant created.
func (r *reservationIDs) all() map[string][]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string][]string, len(r.m))
	for tenant, ids := range r.m {
		out[tenant] = append([]string(nil), ids...)
	}
	return out
}
