package commands

// NodeSessions are the operations a gateway performs for the node daemons
// connected to it: authenticate a node credential, open and close a
// session, record liveness, reconcile a daemon's inventory and
// assignments, dispatch node jobs and record their results. They are apart
// from the API commands (the methods of Handlers), which act for an actor
// at a request: these act for a daemon, fenced by its session epoch and
// the gateway's lease.
type NodeSessions struct{ h *Handlers }

// NodeSessions returns the gateway operations that run with h's database
// and settings.
func (h *Handlers) NodeSessions() NodeSessions { return NodeSessions{h: h} }
