package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"
)

const (
	// linClients is how many clients reserve and release at once: more
	// than the quota, so quota refusals race with releases.
	linClients = 6
	// linGPUs and linQuota make the small fleet: one node of 4 GPUs, a
	// tenant quota of 3 (so capacity never runs out first and every
	// refusal must be QUOTA_EXCEEDED, exactly when 3 are held).
	linGPUs  = 4
	linQuota = 3
	// linCheckTimeout bounds porcupine on one history.
	linCheckTimeout = 30 * time.Second
)

// linInput is one call: reserve (id empty) or release of id.
type linInput struct {
	Release bool
	ID      string
}

// linOutput is its outcome. Unknown: no definite answer (transport error
// or 5xx); a history with one is not checked (the load has no faults, so
// there should be none) and is counted apart.
type linOutput struct {
	OK      bool
	ID      string // the reservation booked
	State   string
	Code    string
	Unknown bool
}

// quotaModel is the sequential specification: the state is the set of held
// reservation ids (sorted, joined). A reserve succeeds, booked, exactly when
// fewer than linQuota are held, else QUOTA_EXCEEDED; a release succeeds
// exactly for a held id.
var quotaModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		held := splitHeld(state.(string))
		in, out := input.(linInput), output.(linOutput)
		switch {
		case !in.Release && out.OK:
			if len(held) >= linQuota || out.State != "booked" || slices.Contains(held, out.ID) {
				return false, state
			}
			return true, joinHeld(append(held, out.ID))
		case !in.Release:
			return len(held) >= linQuota && out.Code == "QUOTA_EXCEEDED", state
		case out.OK:
			if !slices.Contains(held, in.ID) {
				return false, state
			}
			return true, joinHeld(slices.DeleteFunc(held, func(s string) bool { return s == in.ID }))
		default:
			return !slices.Contains(held, in.ID), state
		}
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

func splitHeld(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func joinHeld(ids []string) string {
	slices.Sort(ids)
	return strings.Join(ids, ",")
}

// TestLinearizability records call/return histories of concurrent reserve
// and release over HTTP on a one-node, 4-GPU fleet with a quota of 3 and
// checks each with porcupine against quotaModel. Illegal must be 0.
func TestLinearizability(t *testing.T) {
	sz := runSize(t)
	ctx := t.Context()
	dbURL, _ := freshDatabase(t)
	srv := newServer(t, "all-roles", dbURL, "api,worker,dispatcher,gateway")
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, member := seed(t, ctx, srv.URL(), dbURL, fleet{nodes: 1, gpusPerNode: linGPUs, gpuQuota: linQuota})
	l := newLoad(member, newLedger(), srv.URL())

	counts := map[porcupine.CheckResult]int{}
	ops, unknownOps, unchecked := 0, 0, 0
	for round := range sz.linRounds {
		history := recordRound(ctx, l, sz.linOpsPerCl)
		ops += len(history)
		n := 0
		for _, op := range history {
			if op.Output.(linOutput).Unknown {
				n++
			}
		}
		if unknownOps += n; n > 0 {
			unchecked++
			continue
		}
		res, _ := porcupine.CheckOperationsVerbose(quotaModel, history, linCheckTimeout)
		counts[res]++
		if res == porcupine.Illegal {
			t.Errorf("round %d: history is not linearizable:\n%s", round, describe(history))
		}
	}
	t.Logf("FIGURES linearizability size=%s: histories=%d ops=%d ok=%d illegal=%d unknown=%d (unchecked histories: %d, ops without a definite answer: %d)",
		sz.name, sz.linRounds, ops, counts[porcupine.Ok], counts[porcupine.Illegal], counts[porcupine.Unknown], unchecked, unknownOps)
	if counts[porcupine.Ok] == 0 {
		t.Error("no history was checked")
	}
}

// recordRound runs linClients clients, each doing opsPerClient random
// reserves and releases of what it holds, then releasing everything it
// still holds, so every round starts from an empty quota.
func recordRound(ctx context.Context, l *load, opsPerClient int) []porcupine.Operation {
	var mu sync.Mutex
	var history []porcupine.Operation
	var wg sync.WaitGroup
	for c := range linClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var held []string
			step := func(in linInput) linOutput {
				call := time.Now().UnixNano()
				out := l.linCall(ctx, in)
				ret := time.Now().UnixNano()
				mu.Lock()
				history = append(history, porcupine.Operation{ClientId: c, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
				return out
			}
			for range opsPerClient {
				if len(held) > 0 && rand.N(2) == 0 {
					id := held[rand.N(len(held))]
					if out := step(linInput{Release: true, ID: id}); out.OK {
						held = slices.DeleteFunc(held, func(s string) bool { return s == id })
					}
					continue
				}
				if out := step(linInput{}); out.OK {
					held = append(held, out.ID)
				}
			}
			for _, id := range held {
				step(linInput{Release: true, ID: id})
			}
		}()
	}
	wg.Wait()
	return history
}

// linCall makes one HTTP call, without retries: a retry would blur when
// the operation took effect.
func (l *load) linCall(ctx context.Context, in linInput) linOutput {
	var r reservationJSON
	var err error
	if in.Release {
		err = l.cl.do(ctx, "POST", l.base()+"/v1/reservations/"+in.ID+"/release", "", nil, &r)
	} else {
		body := map[string]any{"poolId": poolID, "gpus": 1, "gpuModel": gpuModel, "vcpu": 1, "memoryMb": 1024, "diskGb": 1,
			"start": l.start.Format(time.RFC3339), "end": l.end.Format(time.RFC3339)}
		err = l.cl.do(ctx, "POST", l.base()+"/v1/reservations", uuid.NewString(), body, &r)
	}
	switch st := statusOf(err); {
	case err == nil:
		return linOutput{OK: true, ID: r.ID, State: r.State}
	case st == 0 || st >= 500:
		return linOutput{Unknown: true, Code: err.Error()}
	default:
		return linOutput{Code: codeOf(err)}
	}
}

func describe(history []porcupine.Operation) string {
	var b strings.Builder
	for _, op := range history {
		fmt.Fprintf(&b, "client %d [%d, %d] %+v -> %+v\n", op.ClientId, op.Call, op.Return, op.Input, op.Output)
	}
	return b.String()
}
