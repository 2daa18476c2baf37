package agent

// How the daemon keeps a session: after a session ends it dials again,
// backing off while attempts keep failing, and re-joins when the gateway
// refuses its credential and a new join token is at hand
// (credential_refused.go).

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// Reconnect backoff: failed attempts in a row wait the configured delay
// for as long as a gateway takes to come back from a restart
// (gatewayRestart); after that the wait doubles up to maxBackoffFactor
// times the delay, so that a node that cannot reach a gateway (one down
// for good) does not dial every second for ever. A refused credential
// backs off further (refusedWait).
const (
	fastRetries      = 3
	maxBackoffFactor = 30
	// gatewayRestart is how long a gateway may answer 503 after a crash
	// and a restart at once: its new process waits for the dead one's
	// lease to lapse (20 s after its last renewal) and takes it within
	// a second (gateway.takeOver), and some slack for its start. Backing
	// off within it made every node of a restarted gateway wait 16 s more
	// than needed (measured: back after 31 to 36 s, the gateway serving
	// from 22 s). A 503 costs the gateway no database query (it checks its
	// lease first), so a fleet dialing every second for that long costs it
	// little.
	gatewayRestart = 30 * time.Second
)

// reconnectWait is how long to wait after failures attempts in a row
// failed, before jitter: delay for the first fastRetries and as many as
// gatewayRestart holds, then doubling, capped at maxBackoffFactor × delay.
func reconnectWait(delay time.Duration, failures int) time.Duration {
	return backoff(delay, failures, fastAttempts(delay), maxBackoffFactor*delay)
}

// fastAttempts is how many failed attempts in a row wait only delay.
func fastAttempts(delay time.Duration) int { return fastRetries + int(gatewayRestart/delay) }

// backoff is the wait after n failures in a row: delay for the first fast
// of them, then doubling with each, capped at most.
func backoff(delay time.Duration, n, fast int, most time.Duration) time.Duration {
	if n <= fast {
		return min(delay, most)
	}
	wait := delay
	for range n - fast {
		wait *= 2
		if wait >= most {
			return most
		}
	}
	return wait
}

// jittered is d spread by ±20 %, so that the nodes of a fleet that lost
// their gateway together do not dial it again in step.
func jittered(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.4-0.2)*float64(d))
}

// keepSession runs sessions through the gateways in turn until ctx (the
// daemon's run) ends; they live on sessions (see session).
func (d *daemon) keepSession(ctx, sessions context.Context) {
	cfg := d.cfg
	failures := 0   // attempts in a row that no gateway welcomed
	superseded := 0 // sessions in a row that another session of this node ended
	refusals := 0   // dials since the last session that a gateway refused the credential at
	for i := 0; ctx.Err() == nil; i++ {
		url := cfg.GatewayURLs[i%len(cfg.GatewayURLs)]
		opened, err := d.session(ctx, sessions, url)
		if ctx.Err() != nil {
			return
		}
		if opened {
			failures, refusals = 0, 0
			d.complaints.clear()
		} else {
			failures++
		}
		if refusal := refusalOf(err); refusal != nil {
			// Said once, not at every attempt: see refused.
			refusals++
			before := d.token
			if !d.refused(ctx, url, refusal, refusals) {
				return
			}
			if d.token != before {
				// Re-joined: the session closed before the refusal was
				// the old credential's revocation, not another daemon's
				// session, so the next close starts the count afresh
				// rather than read as a second daemon (and back off 30 s).
				superseded = 0
			}
			continue
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
		if !d.sleep(ctx, jittered(reconnectWait(cfg.ReconnectDelay, failures+superseded*(fastAttempts(cfg.ReconnectDelay)+1)))) {
			return
		}
	}
}

// refusalOf is errNodeRetired or errCredentialRefused when err is a dial a
// gateway refused, else nil.
func refusalOf(err error) error {
	for _, refusal := range []error{errNodeRetired, errCredentialRefused} {
		if errors.Is(err, refusal) {
			return refusal
		}
	}
	return nil
}

// rejoin replaces a refused credential by joining again, when a join token
// is at hand: an operator who revoked the node's credential (or let it
// expire) writes a new join token to --join-token-file, and the daemon
// picks it up at once (refused watches the file while it waits), without a
// restart or a file to delete by hand. Without one it returns false and no
// error; a join that fails returns its error, and keeps the old credential.
func (d *daemon) rejoin(ctx context.Context) (bool, error) {
	cfg := d.cfg
	if cfg.Joiner == nil {
		if _, err := os.Stat(cfg.JoinTokenFile); cfg.JoinTokenFile == "" || err != nil {
			return false, nil
		}
		// An empty file is a token still being written, not a bad one: the
		// shell of `curl … > join-token` creates the file before curl has
		// the answer. Joining with it would log that the token failed and
		// to write a new one; the file's next change wakes the wait instead.
		if emptyFile(cfg.JoinTokenFile) {
			return false, nil
		}
	}
	token, err := join(ctx, cfg, d.machineGPUs())
	if err != nil {
		return false, err
	}
	d.token = token
	d.log.Info("re-joined with a new join token: a new node credential is in use")
	return true, nil
}

// emptyFile reports whether the file at path holds only white space (a
// file that cannot be read is not empty: the join says why it failed).
func emptyFile(path string) bool {
	b, err := os.ReadFile(path)
	return err == nil && strings.TrimSpace(string(b)) == ""
}

// credentialPath is where the node credential is kept.
func credentialPath(cfg Config) string { return filepath.Join(cfg.StateDir, "credential") }

// supersededByAnother reports whether a session ended because the gateway
// dropped it for a newer session of the same node (close status 1008,
// "session superseded").
func supersededByAnother(err error) bool {
	var ce websocket.CloseError
	return errors.As(err, &ce) && ce.Code == websocket.StatusPolicyViolation && ce.Reason == "session superseded"
}
