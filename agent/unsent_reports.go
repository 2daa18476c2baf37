package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bettercompute/compute/wire"
)

// The reports a daemon keeps for its next session (session.go: an
// instance's end, or its stop, made while no session was open, or whose
// send failed, or that the gateway has not acknowledged yet) are kept in
// the state directory too, not only in memory: a
// daemon killed before a session opened (a crash loop, an upgrade while
// the control plane is unreachable) would take them with it, and once the
// instance is forgotten, its record and exit file removed, nothing on the
// node says how it ended any more. The control plane would then end it
// `lost` at the successor's first inventory, instead of `succeeded` or
// `failed` with its exit status. The file is rewritten, durably (fsynced,
// durable_file.go: a power loss keeps it as a killed daemon does),
// whenever the reports kept change, and read back before the successor adopts anything
// (restore), so they keep their order ahead of what it reports itself. A
// report sent twice (the daemon killed after it sent it, before it was
// acknowledged, or before it rewrote the file) is harmless: the control plane records an instance's
// end once.

// unsentFile is the reports kept for the next session, in the state
// directory.
const unsentFile = "unsent-reports.json"

// loadUnsent reads the reports a killed predecessor kept for its next
// session into d.unsent, ahead of any this daemon makes.
func (d *daemon) loadUnsent() error {
	if d.cfg.StateDir == "" {
		return nil
	}
	path := filepath.Join(d.cfg.StateDir, unsentFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unsent reports: %w", err)
	}
	var kept []wire.Message
	if err := json.Unmarshal(b, &kept); err != nil {
		return fmt.Errorf("unsent reports %s: %w", path, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.unsent = append(kept, d.unsent...)
	return nil
}

// keepUnsent rewrites the file from d.unsent (removes it when there are
// none). A report it could not write is still kept in memory, for the
// next session of this process. Callers hold d.mu.
func (d *daemon) keepUnsent() {
	if d.cfg.StateDir == "" {
		return
	}
	path := filepath.Join(d.cfg.StateDir, unsentFile)
	var err error
	if len(d.unsent) == 0 {
		if err = os.Remove(path); errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
	} else {
		var b []byte
		if b, err = json.Marshal(d.unsent); err == nil {
			err = writeFileDurable(path, b, 0o600)
		}
	}
	if err != nil {
		d.log.Warn("keep the unsent reports on disk: a daemon killed now loses them", "err", err)
	}
}
