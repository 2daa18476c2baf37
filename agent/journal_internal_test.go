package agent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/wire"
)

func commandRecord(id, outcome string) journalRecord {
	return journalRecord{JournalEntry: wire.JournalEntry{Kind: entryCommand, CommandID: id, Outcome: outcome,
		Output: "out of " + id}}
}

// The journal stays bounded: past compactAt lines it becomes a snapshot
// (assignments, generation, the last keepCommands outcomes and every
// command still started) and a tail, and reloads to the same state.
func TestJournalCompactsAndReloads(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	require.NoError(t, err)
	j.compactAt, j.keepCommands = 50, 10

	require.NoError(t, j.append(commandRecord("cmd_running", outcomeStarted)))
	for i := range 30 {
		alloc := fmt.Sprintf("alc_%02d", i)
		start := t0.Add(time.Duration(2*i) * h)
		refused, err := j.assign(assignment(alloc, start, start.Add(h), int64(i+1), gpu("GPU-n1-0")))
		require.NoError(t, err)
		require.Nil(t, refused)
		if i%3 != 0 {
			require.NoError(t, j.unassign(wire.UnassignPayload{AllocationID: alloc, Generation: int64(i + 1)}))
		}
		id := fmt.Sprintf("cmd_%02d", i)
		require.NoError(t, j.append(commandRecord(id, outcomeStarted)))
		require.NoError(t, j.append(commandRecord(id, outcomeSucceeded)))
	}
	require.LessOrEqual(t, journalLines(t, j), 50, "compacted")
	b, err := os.ReadFile(j.path)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(b, snapshotPrefix), "a snapshot first")
	require.NoFileExists(t, j.path+".tmp")

	check := func(j *journal) {
		t.Helper()
		var held []string
		for _, a := range j.assignments() {
			held = append(held, a.AllocationID)
		}
		require.Equal(t, []string{"alc_00", "alc_03", "alc_06", "alc_09", "alc_12", "alc_15", "alc_18", "alc_21",
			"alc_24", "alc_27"}, held)
		a, ok := j.assignment("alc_27")
		require.True(t, ok)
		require.Equal(t, []wire.AssignedDevice{gpu("GPU-n1-0")}, a.Devices)
		require.Equal(t, int64(30), j.observedGeneration())
		for i := 20; i < 30; i++ {
			e, ok := j.commandEntry(fmt.Sprintf("cmd_%02d", i))
			require.True(t, ok, i)
			require.Equal(t, outcomeSucceeded, e.Outcome)
			require.Equal(t, fmt.Sprintf("out of cmd_%02d", i), e.Output, "outputs are kept to answer redeliveries")
		}
		_, ok = j.commandEntry("cmd_00")
		require.False(t, ok, "older outcomes are compacted away")
		e, ok := j.commandEntry("cmd_running")
		require.True(t, ok, "a command still started is always kept")
		require.Equal(t, outcomeStarted, e.Outcome)
		for _, e := range j.replay() {
			require.Empty(t, e.Output)
		}
	}
	check(j)
	seq := j.seq

	reloaded, err := openJournal(dir)
	require.NoError(t, err)
	require.Equal(t, j.id, reloaded.id)
	require.Equal(t, seq, reloaded.seq)
	check(reloaded)
	// It goes on from there: sequence numbers keep growing.
	require.NoError(t, reloaded.append(commandRecord("cmd_next", outcomeSucceeded)))
	e, _ := reloaded.commandEntry("cmd_next")
	require.Equal(t, seq+1, e.Seq)
	again, err := openJournal(dir)
	require.NoError(t, err)
	check(again)
	_, ok := again.commandEntry("cmd_next")
	require.True(t, ok)
}

// A torn or damaged entry in the tail ends the journal at the last good
// entry; a damaged snapshot stops the daemon with a clear message.
func TestJournalDamage(t *testing.T) {
	t.Run("tail", func(t *testing.T) {
		dir := t.TempDir()
		j, err := openJournal(dir)
		require.NoError(t, err)
		_, err = j.assign(assignment("alc_a", t0, t0.Add(h), 1, gpu("GPU-n1-0")))
		require.NoError(t, err)
		require.NoError(t, j.append(commandRecord("cmd_1", outcomeSucceeded)))
		f, err := os.OpenFile(j.path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(`{"seq":3,"kind":"comm` + "\n" + `{"seq":4,"kind":"command","commandId":"cmd_after"}` + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		re, err := openJournal(dir)
		require.NoError(t, err)
		_, ok := re.assignment("alc_a")
		require.True(t, ok)
		_, ok = re.commandEntry("cmd_1")
		require.True(t, ok)
		_, ok = re.commandEntry("cmd_after")
		require.False(t, ok, "nothing after the damaged line is trusted")
	})
	t.Run("snapshot", func(t *testing.T) {
		dir := t.TempDir()
		j, err := openJournal(dir)
		require.NoError(t, err)
		j.compactAt = 3
		for i := range 4 {
			require.NoError(t, j.append(commandRecord(fmt.Sprintf("cmd_%d", i), outcomeSucceeded)))
		}
		b, err := os.ReadFile(j.path)
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(b, snapshotPrefix))
		_, err = openJournal(dir)
		require.NoError(t, err)

		// Cut the snapshot line in the middle.
		line, rest, _ := bytes.Cut(b, []byte("\n"))
		require.NoError(t, os.WriteFile(j.path, append(append(line[:len(line)/2:len(line)/2], '\n'), rest...), 0o600))
		_, err = openJournal(dir)
		require.ErrorContains(t, err, "its snapshot (first line) is damaged")
		require.ErrorContains(t, err, filepath.Join(dir, "journal.jsonl"))

		// A whole snapshot of another journal is no better.
		other := strings.Replace(string(b), j.id, "jnl_someone_else", 1)
		require.NoError(t, os.WriteFile(j.path, []byte(other), 0o600))
		_, err = openJournal(dir)
		require.ErrorContains(t, err, `it belongs to journal "jnl_someone_else"`)
	})
}

// A journal written before assignments were node jobs (assign entries
// with device ids only) still loads, and its assignments still count.
func TestJournalReadsOldAssignEntries(t *testing.T) {
	dir := t.TempDir()
	j, err := openJournal(dir)
	require.NoError(t, err)
	old := `{"seq":1,"kind":"assign","allocationId":"alc_old","deviceIds":["GPU-n1-0"],"at":"2026-01-01T00:00:00Z"}` + "\n"
	require.NoError(t, os.WriteFile(j.path, []byte(old), 0o600))
	re, err := openJournal(dir)
	require.NoError(t, err)
	a, ok := re.assignment("alc_old")
	require.True(t, ok)
	require.Equal(t, "GPU-n1-0", a.Devices[0].Visible)
	refused, err := re.assign(assignment("alc_new", t0, t0.Add(h), 1, gpu("GPU-n1-0")))
	require.NoError(t, err)
	require.NotNil(t, refused)
	require.Equal(t, "alc_old", refused.holder)
	require.Equal(t, "[-∞, ∞)", windowString(refused.start, refused.end), "an old entry holds its devices for ever")
	re.compactAt = 1
	require.NoError(t, re.append(commandRecord("cmd_1", outcomeSucceeded)))
	again, err := openJournal(dir)
	require.NoError(t, err)
	_, ok = again.assignment("alc_old")
	require.True(t, ok, "a compaction keeps it")
}
