package agent

import (
	"bufio"
	"bytes"
	"cmp"
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

	"github.com/bettercompute/compute/wire"
)

// Journal entry kinds.
const (
	entryAssign   = "assign"
	entryUnassign = "unassign"
	entryCommand  = "command"
	entrySnapshot = "snapshot"
)

// Journal bounds: when the file holds more than defaultCompactAt lines it
// is compacted into a snapshot (the assignments held, the observed
// generation, and the last outcome of the defaultKeepCommands most recent
// commands, plus every command still started) followed by an empty tail.
const (
	defaultCompactAt    = 2000
	defaultKeepCommands = 1000
)

// snapshotVersion is the format of a journal snapshot line.
const snapshotVersion = 1

// journalRecord is one line of the journal file: the entry the replay
// carries, plus what the daemon needs to rebuild its state.
type journalRecord struct {
	wire.JournalEntry
	// Assign is the whole assignment of an "assign" entry (absent in
	// entries written before assignments were node jobs: those carry only
	// DeviceIDs).
	Assign *wire.AssignPayload `json:"assignment,omitempty"`
	// Generation of an "unassign" entry; Reason of an "unassign" entry or
	// of a command's failure.
	Generation int64  `json:"generation,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// journalSnapshot is the first line of a compacted journal. Kind comes
// first so that a snapshot line is recognizable by its prefix even when
// it is damaged.
type journalSnapshot struct {
	Kind               string          `json:"kind"`
	Version            int             `json:"version"`
	JournalID          string          `json:"journalId"`
	Seq                int64           `json:"seq"` // the last sequence number it covers
	ObservedGeneration int64           `json:"observedGeneration"`
	Assignments        []journalRecord `json:"assignments"`
	Commands           []journalRecord `json:"commands"`
	At                 time.Time       `json:"at"`
}

// snapshotPrefix starts every snapshot line (see journalSnapshot).
var snapshotPrefix = []byte(`{"kind":"` + entrySnapshot + `"`)

// journal is the daemon's local memory: a file of what it was assigned and
// what it ran, replayed to the gateway at every (re)connect. Its id is
// generated once; a daemon that lost the file comes back with a new id,
// which tells the control plane not to replay non-retry-safe commands into
// it.
//
// The file is a snapshot line (after the first compaction) and a tail of
// entries, each appended and fsynced before the daemon acts on it or
// acknowledges it. It is kept bounded: past compactAt lines, the state it
// describes is written as a new snapshot to a new file, fsynced, and
// renamed over the old one, so a crash leaves the old journal or the new,
// never a mix. A torn line at the end (a crash mid-append) ends the
// journal at the last whole entry; a damaged snapshot stops the daemon at
// start, because without it the daemon would forget what it holds.
type journal struct {
	mu   sync.Mutex
	id   string
	path string
	// seq is the last sequence number written; lines the number of lines
	// in the file.
	seq   int64
	lines int
	// entries are what the replay carries: the snapshot's assignments and
	// commands, then the tail.
	entries []journalRecord
	// assigned maps an allocation to the assignment held for it.
	assigned map[string]wire.AssignPayload
	// generation is the highest generation of an accepted assign or
	// unassign.
	generation int64

	compactAt    int
	keepCommands int
}

// openJournal loads (or creates) the journal in dir.
func openJournal(dir string) (*journal, error) {
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal dir: %w", err)
	}
	if errors.Is(statErr, fs.ErrNotExist) {
		// A new state directory's own name is made durable, or a power
		// loss could take it, with the credential the join wrote into it
		// after deleting the join token.
		if err := syncDir(filepath.Dir(filepath.Clean(dir))); err != nil {
			return nil, fmt.Errorf("journal dir: %w", err)
		}
	}
	j := &journal{path: filepath.Join(dir, "journal.jsonl"), assigned: map[string]wire.AssignPayload{},
		compactAt: defaultCompactAt, keepCommands: defaultKeepCommands}
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
		// Durably: an id file that a power loss left empty would name no
		// journal, and one that came back without the entries appended
		// after it would claim them lost.
		if err := writeFileDurable(idPath, []byte(j.id), 0o600); err != nil {
			return nil, fmt.Errorf("journal id: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("journal id: %w", err)
	default:
		j.id = string(b)
	}
	if err := j.load(); err != nil {
		return nil, err
	}
	return j, nil
}

// load reads the journal file: a snapshot line (if compacted), then the
// tail up to its last whole entry.
func (j *journal) load() error {
	f, err := os.Open(j.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open journal: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20) // a snapshot line holds up to keepCommands outputs
	first := true
	for sc.Scan() {
		line := sc.Bytes()
		if first && bytes.HasPrefix(line, snapshotPrefix) {
			first = false
			if err := j.loadSnapshot(line); err != nil {
				return err
			}
			j.lines++
			continue
		}
		first = false
		var r journalRecord
		if err := json.Unmarshal(line, &r); err != nil || r.Kind == "" || r.Kind == entrySnapshot {
			break // a torn last line after a crash: stop at the last whole entry
		}
		j.apply(r)
		j.lines++
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read journal %s: %w", j.path, err)
	}
	return nil
}

// loadSnapshot restores the state a snapshot line describes, or says why
// it cannot: a daemon that cannot trust its snapshot must not start, or it
// would forget assignments it holds and run commands twice.
func (j *journal) loadSnapshot(line []byte) error {
	bad := func(why string, args ...any) error {
		return fmt.Errorf("journal %s: its snapshot (first line) is damaged: %s; the daemon cannot tell what it "+
			"holds: restore the file, or remove %s and journal-id to start as a new journal (the control plane "+
			"then treats the node as one that lost its memory)", j.path, fmt.Sprintf(why, args...), j.path)
	}
	var s journalSnapshot
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return bad("%v", err)
	}
	if s.Version != snapshotVersion {
		return bad("unknown snapshot version %d", s.Version)
	}
	if s.JournalID != j.id {
		return bad("it belongs to journal %q, not %q", s.JournalID, j.id)
	}
	for _, r := range s.Assignments {
		if r.Kind != entryAssign || r.Assign == nil || r.Assign.AllocationID == "" {
			return bad("an assignment entry without its assignment (seq %d)", r.Seq)
		}
	}
	for _, r := range s.Commands {
		if r.Kind != entryCommand || r.CommandID == "" {
			return bad("a command entry without its command (seq %d)", r.Seq)
		}
	}
	records := append(slices.Clone(s.Assignments), s.Commands...)
	slices.SortStableFunc(records, func(a, b journalRecord) int { return cmp.Compare(a.Seq, b.Seq) })
	for _, r := range records {
		j.apply(r)
	}
	j.seq = max(j.seq, s.Seq)
	j.generation = max(j.generation, s.ObservedGeneration)
	return nil
}

// apply folds r into the in-memory state.
func (j *journal) apply(r journalRecord) {
	j.entries = append(j.entries, r)
	j.seq = max(j.seq, r.Seq)
	switch r.Kind {
	case entryAssign:
		if r.Assign != nil {
			j.assigned[r.AllocationID] = *r.Assign
			j.generation = max(j.generation, r.Assign.Generation)
			return
		}
		// Written by a daemon from before assignments were node jobs:
		// devices by id, without a window.
		a := wire.AssignPayload{AllocationID: r.AllocationID}
		for _, id := range r.DeviceIDs {
			a.Devices = append(a.Devices, wire.AssignedDevice{ID: id, Kind: "gpu", Visible: id})
		}
		j.assigned[r.AllocationID] = a
	case entryUnassign:
		delete(j.assigned, r.AllocationID)
		j.generation = max(j.generation, r.Generation)
	}
}

// append writes r durably (fsync) before the daemon acts on or
// acknowledges it, then applies it.
func (j *journal) append(r journalRecord) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.appendLocked(r)
}

func (j *journal) appendLocked(r journalRecord) error {
	r.Seq = j.seq + 1
	r.At = time.Now().UTC()
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode journal entry: %w", err)
	}
	// The first entry makes the file: its name is made durable too (its
	// directory fsynced), or a power loss could keep the entry's data and
	// lose the file.
	created := false
	f, err := os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		f, err = os.OpenFile(j.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		created = true
	}
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
	if created {
		if err := syncDir(filepath.Dir(j.path)); err != nil {
			return fmt.Errorf("sync journal dir: %w", err)
		}
	}
	j.apply(r)
	j.lines++
	if j.compactAt > 0 && j.lines > j.compactAt {
		// The entry is durable whatever happens here: a failed compaction
		// leaves the old file, which stays correct, only longer.
		if err := j.compactLocked(); err != nil {
			return fmt.Errorf("compact journal: %w", err)
		}
	}
	return nil
}

// compactLocked replaces the journal file with one snapshot line that
// keeps the assignments held, the observed generation, every command whose
// last entry is "started" (its outcome must not be lost at a restart) and
// the last outcome of the keepCommands most recent other commands.
func (j *journal) compactLocked() error {
	s := journalSnapshot{Kind: entrySnapshot, Version: snapshotVersion, JournalID: j.id, Seq: j.seq,
		ObservedGeneration: j.generation, At: time.Now().UTC(), Assignments: []journalRecord{}, Commands: []journalRecord{}}
	lastOf := map[string]journalRecord{}
	for _, r := range j.entries {
		switch r.Kind {
		case entryCommand:
			lastOf[r.CommandID] = r
		case entryAssign:
			if _, held := j.assigned[r.AllocationID]; held {
				lastOf["\x00assign:"+r.AllocationID] = r
			}
		}
	}
	var finished []journalRecord
	for _, r := range lastOf {
		switch {
		case r.Kind == entryAssign:
			if r.Assign == nil { // a legacy entry: keep the state it stands for
				a := j.assigned[r.AllocationID]
				r.Assign = &a
			}
			s.Assignments = append(s.Assignments, r)
		case r.Outcome == outcomeStarted:
			s.Commands = append(s.Commands, r)
		default:
			finished = append(finished, r)
		}
	}
	bySeq := func(a, b journalRecord) int { return cmp.Compare(a.Seq, b.Seq) }
	slices.SortFunc(finished, bySeq)
	if len(finished) > j.keepCommands {
		finished = finished[len(finished)-j.keepCommands:]
	}
	s.Commands = append(s.Commands, finished...)
	slices.SortFunc(s.Assignments, bySeq)
	slices.SortFunc(s.Commands, bySeq)
	line, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, snapshotPrefix) {
		return errors.New("snapshot encoding does not start with its kind")
	}
	if err := writeFileDurable(j.path, append(line, '\n'), 0o600); err != nil {
		return err
	}
	j.entries = append(slices.Clone(s.Assignments), s.Commands...)
	slices.SortStableFunc(j.entries, bySeq)
	j.lines = 1
	return nil
}

// commandEntry returns the journal's last entry of command id.
func (j *journal) commandEntry(id string) (journalRecord, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := len(j.entries) - 1; i >= 0; i-- {
		if e := j.entries[i]; e.Kind == entryCommand && e.CommandID == id {
			return e, true
		}
	}
	return journalRecord{}, false
}

// replay is the journal as sent after (re)connecting: every entry since
// the last compaction (and what the snapshot kept), but commands without
// their output. The control plane needs outcomes to tell redeliveries from
// new work; an output it lost is sent again with the command's result when
// it re-sends the command.
func (j *journal) replay() []wire.JournalEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]wire.JournalEntry, len(j.entries))
	for i, r := range j.entries {
		out[i] = r.JournalEntry
		out[i].Output = ""
	}
	return out
}
