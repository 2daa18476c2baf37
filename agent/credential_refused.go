package agent

// What the daemon does when the gateways refuse its node credential: it
// says once what the operator must do, retries less and less often, and
// joins again as soon as a new join token is written for it.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/bettercompute/compute/wire"
)

// errCredentialRefused is a session's dial answered 401: the node's
// credential was revoked, or superseded by a re-join past its grace.
var errCredentialRefused = errors.New("the gateway refused the node credential")

// errNodeRetired is a dial answered 401 wire.RefusedNodeRetired: the node
// was retired, and nothing will let this daemon in again.
var errNodeRetired = errors.New("the gateway refused the node credential: the node is retired")

// Refused credentials: attempts back off from the reconnect delay, doubling
// up to refusedMaxWait (a refusal does not go away by itself: it takes an
// operator's join token, or nothing will ever end it), and the condition is
// logged when it begins or changes, then every complaintRepeat while it
// lasts, not at every attempt. While it waits the daemon looks for a new
// join token every joinTokenPoll, so an operator's answer is taken at once.
const (
	refusedMaxWait  = time.Hour
	complaintRepeat = time.Hour
	joinTokenPoll   = 2 * time.Second
)

// Operators' instructions, logged once per condition.
const (
	msgNodeRetired = "this node is retired: the control plane refuses it for good and issues no join token for it. " +
		"Stop this agent (a stop ends the workloads it still runs), then remove its state directory; " +
		"to use the machine again, join it under a new node id"
	msgCredentialRefused = "the gateway refuses this node's credential (revoked, or replaced by a re-join on another machine): " +
		"create a join token for the node (POST /v1/nodes/{id}/join-tokens) and write it to --join-token-file; " +
		"the agent joins with it within seconds, without a restart"
	msgCredentialRefusedNoFile = "the gateway refuses this node's credential (revoked, or replaced by a re-join on another machine): " +
		"create a join token for the node (POST /v1/nodes/{id}/join-tokens) and restart the agent with it in --join-token-file"
	msgRejoinFailed = "re-joining with the join token in --join-token-file failed: write a new join token there " +
		"(a join token is used once, and expires)"
)

// dialRefused wraps a dial error as errCredentialRefused or errNodeRetired
// when the gateway answered 401.
func dialRefused(url string, resp *http.Response, err error) error {
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("dial %s: %w", url, err)
	}
	refusal := errCredentialRefused
	if resp.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		if strings.TrimSpace(string(body)) == wire.RefusedNodeRetired {
			refusal = errNodeRetired
		}
	}
	return fmt.Errorf("dial %s: %w: %w", url, refusal, err)
}

// refusedWait is how long to wait after refusals dials in a row were
// refused, before jitter: the reconnect delay, doubling, capped at
// refusedMaxWait.
func refusedWait(delay time.Duration, refusals int) time.Duration {
	return backoff(delay, refusals, 1, refusedMaxWait)
}

// complaints remembers the condition last logged, and when, so that a
// loop that runs into the same condition at every attempt logs it once,
// and again only when it changes or every complaintRepeat.
type complaints struct {
	last string
	at   time.Time
}

// due reports whether condition is to be logged now, and if so notes it.
func (c *complaints) due(condition string, now time.Time) bool {
	if condition == c.last && now.Sub(c.at) < complaintRepeat {
		return false
	}
	c.last, c.at = condition, now
	return true
}

// clear forgets the condition: it ended.
func (c *complaints) clear() { c.last = "" }

// refused handles a dial the gateway at url refused (refusal is
// errNodeRetired or errCredentialRefused; refusals counts them in a row):
// it joins again when a join token is at hand, else tells the operator
// what to do, once, and waits. It reports whether to go on.
func (d *daemon) refused(ctx context.Context, url string, refusal error, refusals int) bool {
	cfg := d.cfg
	retired := errors.Is(refusal, errNodeRetired)
	wait := jittered(refusedWait(cfg.ReconnectDelay, refusals))
	next := slog.Duration("next_attempt_in", wait.Round(time.Second))
	if retired {
		if d.complaints.due(msgNodeRetired, d.now()) {
			d.log.Error(msgNodeRetired, "state_dir", cfg.StateDir, "gateway", url, next)
		}
		return d.pause(ctx, wait, "")
	}
	rejoined, err := d.rejoin(ctx)
	switch {
	case rejoined:
		d.complaints.clear()
		return true
	case err != nil:
		// The token at hand did not do: that is the condition now.
		if d.complaints.due(msgRejoinFailed+": "+err.Error(), d.now()) {
			d.log.Error(msgRejoinFailed, "join_token_file", cfg.JoinTokenFile, "err", err, next)
		}
	case cfg.JoinTokenFile == "":
		if d.complaints.due(msgCredentialRefusedNoFile, d.now()) {
			d.log.Error(msgCredentialRefusedNoFile, "gateway", url, next)
		}
	default:
		if d.complaints.due(msgCredentialRefused, d.now()) {
			d.log.Error(msgCredentialRefused, "join_token_file", cfg.JoinTokenFile, "gateway", url, next)
		}
	}
	return d.pause(ctx, wait, cfg.JoinTokenFile)
}

// pause waits for wait, or less when watch (a join token file; "" for
// none) is written meanwhile. It reports whether ctx is still live.
func (d *daemon) pause(ctx context.Context, wait time.Duration, watch string) bool {
	before := stampOf(watch)
	for wait > 0 {
		step := wait
		if watch != "" {
			step = min(step, joinTokenPoll)
		}
		if !d.sleep(ctx, step) {
			return false
		}
		wait -= step
		if watch != "" && stampOf(watch) != before {
			return true
		}
	}
	return true
}

// fileStamp tells a file's versions apart: written, rewritten, removed.
type fileStamp struct {
	exists bool
	mod    time.Time
	size   int64
}

func stampOf(path string) fileStamp {
	if path == "" {
		return fileStamp{}
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{exists: true, mod: fi.ModTime(), size: fi.Size()}
}

// sleep waits d, or until ctx ends; false when ctx ended. Tests replace it
// (daemon.sleepFunc) to move a fake clock instead.
func (d *daemon) sleep(ctx context.Context, dur time.Duration) bool {
	if d.sleepFunc != nil {
		return d.sleepFunc(ctx, dur)
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
