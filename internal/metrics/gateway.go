package metrics

import "github.com/prometheus/client_golang/prometheus"

// Gateway is the metrics of a process's gateway role: the daemon sessions
// it holds now and those it opened. The nodes' liveness states
// (compute_nodes), read every few seconds, do not show a session that
// drops and comes back between two scrapes; the rate of opens does.
type Gateway struct {
	opened, skewed prometheus.Counter
}

// NewGateway registers the gateway's metrics on reg: the counter of
// sessions opened, and compute_gateway_sessions, which asks held how many
// sessions the gateway holds at each scrape.
func NewGateway(reg prometheus.Registerer, held func() int) *Gateway {
	registerOrReuse(reg, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: NameGatewaySessions,
		Help: "Daemon sessions this process's gateway holds now.",
	}, func() float64 { return float64(held()) }))
	return &Gateway{opened: registerOrReuse(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: NameGatewaySessionsOpened,
		Help: "Daemon sessions this process's gateway opened (a node's reconnect opens another).",
	})), skewed: registerOrReuse(reg, prometheus.NewCounter(prometheus.CounterOpts{
		Name: NameGatewayClockSkewed,
		Help: "Daemon sessions this process's gateway opened whose node's clock was off from the control plane's by more than a second.",
	}))}
}

// ClockSkewed counts one session opened by a node whose clock is off; a
// nil Gateway counts nothing.
func (g *Gateway) ClockSkewed() {
	if g == nil {
		return
	}
	g.skewed.Inc()
}

// SessionOpened counts one daemon session opened; a nil Gateway counts
// nothing.
func (g *Gateway) SessionOpened() {
	if g == nil {
		return
	}
	g.opened.Inc()
}
