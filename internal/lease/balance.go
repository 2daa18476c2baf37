package lease

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bettercompute/compute/internal/db"
)

// Group is a set of leases shared out among the live members of a group of
// processes: each member holds its share and gives the surplus up, so that
// adding a process adds throughput. Membership is itself a lease
// (MemberPrefix + owner), renewed in the same statement as the shared
// leases, so a member that stops renewing leaves the group exactly when
// its leases lapse and the others' shares grow to take them.
type Group struct {
	// Names are the leases shared out (the work-queue shards).
	Names []string
	// MemberPrefix names the membership leases ("worker:").
	MemberPrefix string
}

// Shares is a member's holding after a Balance.
type Shares struct {
	// Held are the leases of Names the member holds, draining ones
	// included: work already running under them finishes fenced by them.
	Held []Lease
	// Keep says, parallel to Held, whether the member keeps the lease
	// (true) or is draining it (false): it starts no new work under it,
	// and gives it up once no work runs under it.
	Keep []bool
	// Members is how many live members the group has, the caller included.
	Members int
	// Target is the caller's share: len(Names)/Members, plus one for the
	// first len(Names)%Members members in owner order.
	Target int
	// DBNow is compute_now() at the balance.
	DBNow time.Time
}

// Balance renews owner's membership of g and its share of g's leases in
// one statement: it keeps up to its share (the busy ones first), gives
// the surplus up unless busy (guarded by owner and epoch, so a lease
// someone else took meanwhile is left alone), and, when take is set,
// takes free leases up to its share. busy are the names under which work
// of this owner is running now. Like Acquire, once sent it runs to its
// end even when ctx ends meanwhile.
func (g Group) Balance(ctx context.Context, q *db.Queries, owner string, busy []string, take bool, ttl time.Duration) (Shares, error) {
	ctx, cancel, err := settled(ctx)
	defer cancel()
	if err != nil {
		return Shares{}, fmt.Errorf("balance leases: %w", err)
	}
	if busy == nil {
		busy = []string{}
	}
	rows, err := q.LeaseBalance(ctx, db.LeaseBalanceParams{Owner: owner, MemberPrefix: g.MemberPrefix,
		Names: g.Names, Busy: busy, TtlSeconds: ttl.Seconds(), Take: take})
	if err != nil {
		return Shares{}, fmt.Errorf("balance leases: %w", err)
	}
	var s Shares
	for _, r := range rows {
		s.Members, s.Target, s.DBNow = int(r.Members), int(r.Target), r.DbNow
		if strings.HasPrefix(r.Name, g.MemberPrefix) {
			continue
		}
		s.Held = append(s.Held, Lease{Name: r.Name, Owner: owner, Epoch: r.Epoch, ExpiresAt: r.ExpiresAt, DBNow: r.DbNow})
		s.Keep = append(s.Keep, r.Keep)
	}
	return s, nil
}
