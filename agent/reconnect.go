package agent

// How the daemon keeps a session: after a session ends it dials again,
// backing off while attempts keep failing, and re-joins when the gateway
// refuses its credential and a new join token is at hand.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/coder/websocket"
)

// errCredentialRefused is a session's dial answered 401: the node's
// credential was revoked or expired.
var errCredentialRefused = errors.New("the gateway refused the node credential")

// Reconnect backoff: the first few failed attempts in a row wait the
// configured delay (a gateway restarting, a lease moving: back in a
// second); after them the wait doubles up to maxBackoffFactor times the
// delay, so that a node that cannot get in (a revoked credential, a
// gateway down for good) does not dial every second for ever.
const (
	fastRetries      = 3
	maxBackoffFactor = 30
)

// reconnectWait is how long to wait after failures attempts in a row
// failed, before jitter: delay for the first fastRetries, then doubling,
// capped at maxBackoffFactor × delay.
func reconnectWait(delay time.Duration, failures int) time.Duration {
	if failures <= fastRetries {
		return delay
	}
	wait := delay
	for range failures - fastRetries {
		wait *= 2
		if wait >= maxBackoffFactor*delay {
			return maxBackoffFactor * delay
		}
	}
	return wait
}

// jittered is d spread by ±20 %, so that the nodes of a fleet that lost
// their gateway together do not dial it again in step.
func jittered(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// keepSession runs sessions through the gateways in turn until ctx ends.
func (d *daemon) keepSession(ctx context.Context) {
	cfg := d.cfg
	failures := 0   // attempts in a row that no gateway welcomed
	superseded := 0 // sessions in a row that another session of this node ended
	for i := 0; ; i++ {
		url := cfg.GatewayURLs[i%len(cfg.GatewayURLs)]
		opened, err := d.session(ctx, url)
		if ctx.Err() != nil {
			return
		}
		if opened {
			failures = 0
		} else {
			failures++
		}
		if supersededByAnother(err) {
			// This daemon never supersedes its own session (it runs one at
			// a time): the control plane closed it (a revoked credential),
			// or another daemon with this node's credential opened one. Two
			// daemons would take the node from each other every second,
			// each time flipping its GPUs' health: back off as from
			// failures, and say so when it repeats.
			superseded++
			if superseded > 1 {
				d.log.Error("another daemon keeps taking this node's session: is its agent running twice (a copied state directory, or a re-join while the old machine runs)?",
					"gateway", url, "times_in_a_row", superseded)
			} else {
				d.log.Warn("session superseded or closed by the control plane", "gateway", url)
			}
		} else {
			superseded = 0
			d.log.Warn("session ended", "gateway", url, "err", err)
		}
		if errors.Is(err, errCredentialRefused) {
			if rejoined := d.rejoin(ctx); rejoined {
				failures = 0
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(jittered(reconnectWait(cfg.ReconnectDelay, failures+superseded*(fastRetries+1)))):
		}
	}
}

// rejoin replaces a refused credential by joining again, when a join token
// is at hand: an operator who revoked the node's credential (or let it
// expire) writes a new join token to --join-token-file, and the daemon
// picks it up at its next attempt, without a restart or a file to delete
// by hand. Without one it says what it needs and keeps the old credential.
func (d *daemon) rejoin(ctx context.Context) bool {
	cfg := d.cfg
	if cfg.Joiner == nil {
		if _, err := os.Stat(cfg.JoinTokenFile); cfg.JoinTokenFile == "" || err != nil {
			d.log.Error("the node credential was refused; write a new join token for this node to --join-token-file",
				"join_token_file", cfg.JoinTokenFile)
			return false
		}
	}
	token, err := join(ctx, cfg, d.machineGPUs())
	if err != nil {
		d.log.Error("re-join failed", "err", err)
		return false
	}
	d.token = token
	d.log.Info("re-joined with a new join token: a new node credential is in use")
	return true
}

// credentialPath is where the node credential is kept.
func credentialPath(cfg Config) string { return filepath.Join(cfg.StateDir, "credential") }

// dialRefused wraps a dial error as errCredentialRefused when the gateway
// answered 401.
func dialRefused(url string, status int, err error) error {
	if status == 401 {
		return fmt.Errorf("dial %s: %w: %w", url, errCredentialRefused, err)
	}
	return fmt.Errorf("dial %s: %w", url, err)
}

// supersededByAnother reports whether a session ended because the gateway
// dropped it for a newer session of the same node (close status 1008,
// "session superseded").
func supersededByAnother(err error) bool {
	var ce websocket.CloseError
	return errors.As(err, &ce) && ce.Code == websocket.StatusPolicyViolation && ce.Reason == "session superseded"
}
