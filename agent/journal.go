package agent

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/bettercompute/compute/nodes/wire"
)

// journal is the daemon's local memory: an append-only file of what it was
// assigned and what it ran, replayed to the gateway at every (re)connect.
// Its id is generated once; a daemon that lost the file comes back with a
// new id, which tells the control plane not to replay non-retry-safe
// commands into it.
type journal struct {
	mu      sync.Mutex
	id      string
	path    string
	entries []wire.JournalEntry
	// held maps an allocation to the devices it holds.
	held map[string][]string
}

// openJournal loads (or creates) the journal in dir.
func openJournal(dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal dir: %w", err)
	}
	j := &journal{path: filepath.Join(dir, "journal.jsonl"), held: map[string][]string{}}
	idPath := filepath.Join(dir, "journal-id")
	b, err := os.ReadFile(idPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		_ = os.Remove(j.path) // entries without their id are not trustworthy
		raw := make([]byte, 16)
		if _, err := rand.Read(raw); err != nil {
			return nil, fmt.Errorf("journal id: %w", err)
		}
		j.id = "jnl_" + hex.EncodeToString(raw)
		if err := os.WriteFile(idPath, []byte(j.id), 0o600); err != nil {
			return nil, fmt.Errorf("journal id: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("journal id: %w", err)
	default:
		j.id = string(b)
	}
	f, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e wire.JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			break // a torn last line after a crash: stop at the last whole entry
		}
		j.apply(e)
	}
	return j, sc.Err()
}

func (j *journal) apply(e wire.JournalEntry) {
	j.entries = append(j.entries, e)
	switch e.Kind {
	case "assign":
		j.held[e.AllocationID] = e.DeviceIDs
	case "unassign":
		delete(j.held, e.AllocationID)
	}
}

// append writes e durably (fsync) before the daemon acts on or acknowledges
// it, then applies it.
func (j *journal) append(e wire.JournalEntry) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appendLocked(e)
}

func (j *journal) appendLocked(e wire.JournalEntry) error {
	e.Seq = int64(len(j.entries)) + 1
	e.At = time.Now().UTC()
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode journal entry: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("write journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync journal: %w", err)
	}
	j.apply(e)
	return nil
}

// assign records an assignment unless one of its devices is already held
// by another allocation: defense in depth behind the database's exclusion
// constraint. It returns the refusal reason, or "".
func (j *journal) assign(allocationID string, devices []string) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for other, held := range j.held {
		if other == allocationID {
			continue
		}
		for _, d := range devices {
			if slices.Contains(held, d) {
				return fmt.Sprintf("device %s is held by allocation %s", d, other), nil
			}
		}
	}
	if slices.Equal(j.held[allocationID], devices) {
		return "", nil // a redelivery: already recorded
	}
	return "", j.appendLocked(wire.JournalEntry{Kind: "assign", AllocationID: allocationID, DeviceIDs: devices})
}

func (j *journal) snapshot() []wire.JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.entries)
}
