package commands

import "github.com/bettercompute/compute/internal/workqueue"

// Reconcilers are the write side's work-queue handlers, one per kind. They
// are apart from the API commands (the methods of Handlers), which act for
// an actor at a request: a reconciler acts as the system when time passes
// (a reservation's start or end, a node's liveness threshold, a
// credential's grace) or when a lost row must be put back (the resyncs).
// Each is fenced by the shard lease its item was claimed under, so a
// worker whose shard was taken over cannot write.
type Reconcilers struct{ h *Handlers }

// Reconcilers returns the work-queue handlers that run with h's database
// and settings.
func (h *Handlers) Reconcilers() Reconcilers { return Reconcilers{h: h} }

// ByKind is every reconciler by the work-queue kind it handles, for a
// worker to register.
func (r Reconcilers) ByKind() map[string]workqueue.Handler {
	return map[string]workqueue.Handler{
		KindReservationPlace:    r.ReservationPlace,
		KindReservationQueue:    r.ReservationQueue,
		KindReservationActivate: r.ReservationActivate,
		KindReservationExpire:   r.ReservationExpire,
		KindReservationResync:   r.ReservationResync,
		KindNodeLiveness:        r.NodeLiveness,
		KindNodeLivenessSweep:   r.NodeLivenessSweep,
		KindNodeCredentialGrace: r.NodeCredentialGrace,
		KindNodeResync:          r.NodeResync,
		KindFairShareFold:       r.FairShareFold,
	}
}
