package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/bettercompute/compute/wire"
)

// daemon is a running agent: its credential and its journal.
type daemon struct {
	cfg     Config
	token   string
	journal *journal
	log     *slog.Logger
	// gpus is the node's inventory (nvidia-smi or the fake one), as last
	// read (watchInventory reads it again while a session is open).
	gpusMu sync.Mutex
	gpus   []wire.InventoryGPU
	// running are the commands this process is carrying out now.
	running runningCommands
	// instances are the workloads this process started.
	instances instanceProcesses
	// sandbox is where and as whom workloads run.
	sandbox *sandbox
	// now is the node's own clock; windowNow (the control plane's clock
	// as last measured, see clock.go) judges assignments' windows.
	now     func() time.Time
	cpClock controlPlaneClock
	// assigned wakes the watchdog when an assignment is recorded, so that
	// it times its next sleep to the new window's end too (buffered: one
	// wake-up is enough).
	assigned chan struct{}

	// complaints is the condition of the session loop last logged (a
	// refused credential), so that it is logged once, not at every attempt.
	complaints complaints
	// sleepFunc, when set, replaces the session loop's waits, and those
	// between resends of unacknowledged reports (tests move a fake clock
	// with it).
	sleepFunc func(ctx context.Context, d time.Duration) bool

	// current is the session open now, for reports no job asked for.
	mu         sync.Mutex
	current    *websocket.Conn
	currentCtx context.Context
	// unsent are the reports made while no session was open (or whose
	// send failed), and, while the session's gateway acknowledges reports
	// (acks), those sent it has not acknowledged yet, in order: the next
	// session sends them first (see openReports). The state directory
	// keeps a copy, for a successor if this process is killed first
	// (unsent_reports.go).
	unsent []wire.Message
	// acks says the current session's gateway acknowledges reports
	// (wire.Message.ReportAcks in its welcome).
	acks bool
	// resends times, by report id, the next resend on the current session
	// of each report it has not acknowledged (report_resend.go).
	resends map[string]resendTimer
}

// session runs one session through the gateway at base until it ends;
// opened says whether the gateway welcomed it (for keepSession's backoff).
// Commands run on life, the daemon's run: they outlive the session. The
// session itself lives on sessions, which outlives life: a daemon that
// stops reports on it the workloads its shutdown stopped, then closes it
// (stopGracefully).
func (d *daemon) session(life, sessions context.Context, base string) (opened bool, err error) {
	ctx, cancel := context.WithCancel(sessions)
	defer cancel()
	u := strings.TrimRight(base, "/") + wire.Path
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		return false, dialRefused(u, resp, err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(wire.MaxMessageBytes)
	// The node's clock goes with the hello, so that the control plane
	// sees, and says, when it is off.
	nodeNow := d.now().UTC()
	if err := send(ctx, ws, wire.Message{Type: wire.TypeHello, JournalID: d.journal.id,
		ObservedGeneration: d.journal.observedGeneration(), Now: &nodeNow}); err != nil {
		return opened, err
	}
	welcome, err := receive(ctx, ws)
	if err != nil {
		return opened, err
	}
	if welcome.Type != wire.TypeWelcome {
		return false, fmt.Errorf("expected welcome, got %q", welcome.Type)
	}
	opened = true
	if welcome.Now != nil {
		d.adoptControlPlaneTime(*welcome.Now)
	}
	d.log.Info("session opened", "gateway", base, "epoch", welcome.SessionEpoch)
	// Replay: the gateway learns what this daemon holds and ran, so the
	// control plane can tell redeliveries from new work.
	if err := send(ctx, ws, wire.Message{Type: wire.TypeReplay, JournalID: d.journal.id,
		Journal: d.journal.replay()}); err != nil {
		return opened, err
	}
	// Then what ended while no session was open, and from now on every
	// report: before the inventory, which no longer lists what they end.
	if err := d.openReports(ctx, ws, welcome.ReportAcks); err != nil {
		return opened, err
	}
	defer d.setCurrent(nil, nil)
	// Then what it holds and runs now.
	if err := d.sendInventory(ctx, ws); err != nil {
		return opened, err
	}
	// The watchdog looks at every (re)connect, and reports on this session.
	go d.resync()
	go d.heartbeat(ctx, ws)
	go d.watchInventory(ctx, ws)
	if welcome.ReportAcks {
		go d.resendUnacknowledged(ctx, ws)
	}
	for {
		m, err := receive(ctx, ws)
		if err != nil {
			return opened, err
		}
		if m.Type == wire.TypeReportAck {
			d.acked(m.ReportID)
			continue
		}
		if m.Type == wire.TypeCommand {
			if !currentEpoch(m, welcome.SessionEpoch) {
				// A zombie's send: the job was marked sent at another
				// epoch. The control plane sends it again at this one.
				d.log.Warn("refused a command from another session epoch", "command", m.CommandID,
					"epoch", m.SessionEpoch, "session", welcome.SessionEpoch)
				continue
			}
			if err := d.command(ctx, life, ws, m); err != nil {
				return opened, err
			}
		}
	}
}

// currentEpoch reports whether m was sent at the session epoch this daemon
// is in. Node jobs are marked sent, and committed, before the gateway
// writes them: one that a zombie gateway (its session superseded after the
// commit) still writes carries an older epoch, and is refused.
func currentEpoch(m wire.Message, session int64) bool { return m.SessionEpoch == session }

// sendInventory sends TypeInventory: the NodeState in its Payload.
func (d *daemon) sendInventory(ctx context.Context, ws *websocket.Conn) error {
	st := d.nodeState()
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode inventory: %w", err)
	}
	return send(ctx, ws, wire.Message{Type: wire.TypeInventory, JournalID: d.journal.id,
		ObservedGeneration: st.ObservedGeneration, Payload: b})
}

func (d *daemon) setCurrent(ctx context.Context, ws *websocket.Conn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.current, d.currentCtx, d.acks, d.resends = ws, ctx, false, nil
}

// closeSession closes the session open now, if any, with a close
// handshake: the gateway answers it only once it has read, and recorded,
// every message sent before it.
func (d *daemon) closeSession() {
	d.mu.Lock()
	ws := d.current
	d.mu.Unlock()
	if ws == nil {
		return
	}
	if err := ws.Close(websocket.StatusNormalClosure, reasonDaemonStopped); err != nil {
		d.log.Warn("close the session", "err", err)
	}
}

// openReports makes ws the session reports go on, once it has sent on it
// the reports kept while none was open. A report the daemon makes while no
// session is open (an instance that exited while the daemon was killed,
// found at its restart; one that exited or was stopped while the node was
// disconnected) is kept, not dropped: the session's inventory would no
// longer list its instance, and the control plane would end it as lost
// rather than with its exit status or the daemon's reason. Each is
// recorded at the epoch of the session it comes in on, as any report; one
// that was recorded already is left as it is (RecordInstanceStopped is
// idempotent). To a gateway that acknowledges reports (acks), each is kept
// until it is acknowledged (acked), and sent again at the next session if
// it is not (and, while the session stays open, on it once it has gone
// unacknowledged a while: report_resend.go): written is not recorded, and
// a gateway killed, or whose transaction failed, after the daemon wrote a
// report would lose it. To one that does not (a release before it did), a
// report is forgotten once written, as it was: kept, it would be sent at
// every session. The lock is held throughout, so a report made meanwhile
// comes after them.
func (d *daemon) openReports(ctx context.Context, ws *websocket.Conn, acks bool) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	sent := 0
	var err error
	d.resends = nil
	for i := range d.unsent {
		if d.unsent[i].ReportID == "" { // kept by a daemon of a release before report ids
			d.unsent[i].ReportID = rand.Text()
		}
		if err = send(ctx, ws, d.unsent[i]); err != nil {
			break // the rest wait for the next session
		}
		if acks {
			d.sentNow(d.unsent[i])
		}
		sent++
	}
	if !acks && sent > 0 {
		// What was sent leaves the state directory's copy too
		// (unsent_reports.go).
		d.unsent = d.unsent[sent:]
		d.keepUnsent()
	}
	if err != nil {
		return err
	}
	d.current, d.currentCtx, d.acks = ws, ctx, acks
	return nil
}

// report sends m on the session open now. It is kept for the next session
// (openReports), in the state directory too (unsent_reports.go), by the
// time report returns, when there is no session, when the send fails, and,
// when the session's gateway acknowledges reports, until it does (acked).
func (d *daemon) report(m wire.Message) {
	m.ReportID = rand.Text()
	d.mu.Lock()
	ws, ctx, acks := d.current, d.currentCtx, d.acks
	if ws == nil || acks {
		d.unsent = append(d.unsent, m)
		d.keepUnsent()
	}
	if ws != nil && acks {
		d.sentNow(m)
	}
	d.mu.Unlock()
	if ws == nil {
		d.log.Info("no session to report on: the next one will", "type", m.Type, "allocation", m.AllocationID)
		return
	}
	if err := send(ctx, ws, m); err != nil {
		d.log.Warn("report: the next session will", "type", m.Type, "err", err)
		if !acks { // kept already otherwise
			d.mu.Lock()
			d.unsent = append(d.unsent, m)
			d.keepUnsent()
			d.mu.Unlock()
		}
	}
}

// acked forgets the report the gateway acknowledged (wire.TypeReportAck):
// it has recorded it, or refused it for good.
func (d *daemon) acked(id string) {
	if id == "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, m := range d.unsent {
		if m.ReportID == id {
			delete(d.resends, id)
			d.unsent = append(d.unsent[:i:i], d.unsent[i+1:]...)
			d.keepUnsent()
			return
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
