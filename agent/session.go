package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/bettercompute/compute/nodes/wire"
)

// daemon is a running agent: its credential and its journal.
type daemon struct {
	cfg     Config
	token   string
	journal *journal
	log     *slog.Logger
	// running are the commands this process is carrying out now.
	running runningCommands
	// instances are the workloads this process started.
	instances instanceProcesses
}

// session runs one session through the gateway at base until it ends.
func (d *daemon) session(ctx context.Context, base string) error {
	life := ctx // outlives the session: commands keep running
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	u := strings.TrimRight(base, "/") + wire.Path
	ws, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		return fmt.Errorf("dial %s: %w", u, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(wire.MaxMessageBytes)
	if err := send(ctx, ws, wire.Message{Type: wire.TypeHello, JournalID: d.journal.id}); err != nil {
		return err
	}
	welcome, err := receive(ctx, ws)
	if err != nil {
		return err
	}
	if welcome.Type != wire.TypeWelcome {
		return fmt.Errorf("expected welcome, got %q", welcome.Type)
	}
	d.log.Info("session opened", "gateway", base, "epoch", welcome.SessionEpoch)
	// Replay: the gateway learns what this daemon holds and ran, so the
	// control plane can tell redeliveries from new work.
	if err := send(ctx, ws, wire.Message{Type: wire.TypeReplay, JournalID: d.journal.id,
		Journal: d.journal.replay()}); err != nil {
		return err
	}
	go d.heartbeat(ctx, ws)
	for {
		m, err := receive(ctx, ws)
		if err != nil {
			return err
		}
		switch m.Type {
		case wire.TypeAssign:
			if err := d.assign(ctx, ws, m); err != nil {
				return err
			}
		case wire.TypeCommand:
			if err := d.command(ctx, life, ws, m); err != nil {
				return err
			}
		}
	}
}

func (d *daemon) heartbeat(ctx context.Context, ws *websocket.Conn) {
	t := time.NewTicker(wire.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := send(ctx, ws, wire.Message{Type: wire.TypeHeartbeat}); err != nil {
				return
			}
		}
	}
}

// assign journals an assignment before acknowledging it, or refuses it
// when it overlaps devices another allocation holds here: the allocation is
// then reported as failed.
func (d *daemon) assign(ctx context.Context, ws *websocket.Conn, m wire.Message) error {
	reason, err := d.journal.assign(m.AllocationID, m.DeviceIDs)
	if err != nil {
		reason = "journal: " + err.Error()
	}
	if reason != "" {
		d.log.Warn("assignment refused", "allocation", m.AllocationID, "reason", reason)
	}
	return send(ctx, ws, wire.Message{Type: wire.TypeAssignResult, AllocationID: m.AllocationID,
		DeviceIDs: m.DeviceIDs, Accepted: reason == "", Reason: reason})
}

func send(ctx context.Context, ws *websocket.Conn, m wire.Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s: %w", m.Type, err)
	}
	if err := ws.Write(ctx, websocket.MessageText, b); err != nil {
		return fmt.Errorf("send %s: %w", m.Type, err)
	}
	return nil
}

func receive(ctx context.Context, ws *websocket.Conn) (wire.Message, error) {
	var m wire.Message
	_, b, err := ws.Read(ctx)
	if err != nil {
		return m, fmt.Errorf("receive: %w", err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("decode message: %w", err)
	}
	return m, nil
}
