package chaos

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bettercompute/compute/agent"
)

// releaseUIDs gives back the workload user ids a killed daemon held: the
// entries of the machine's uid table (agent.DefaultUIDTable, which the
// e2e daemons share with every daemon on the machine) whose owner is the
// daemon's state directory ("<state>#<allocation>"), once its containers
// are deleted. A daemon releases an allocation's id at its unassign, but a
// test's daemon is killed for good with its allocations still assigned:
// every e2e run left its allocations' ids taken, under a state directory
// that no longer exists (377 of the table's 391 entries on the machine
// where this was found). It takes the table's lock, as the daemons do.
func releaseUIDs(t *testing.T, stateDir string) {
	t.Helper()
	table := agent.DefaultUIDTable
	lock, err := os.OpenFile(table+".lock", os.O_RDWR|unix.O_NOFOLLOW, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return // no daemon took an id
	}
	if err != nil {
		t.Errorf("uid table lock: %v", err)
		return
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Errorf("uid table lock: %v", err)
		return
	}
	b, err := os.ReadFile(table)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("uid table: %v", err)
		}
		return
	}
	entries := map[string]uint32{}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Errorf("uid table %s: %v", table, err)
		return
	}
	abs, err := filepath.Abs(stateDir)
	if err != nil {
		t.Errorf("state dir: %v", err)
		return
	}
	changed := false
	for owner := range entries {
		if strings.HasPrefix(owner, abs+"#") {
			delete(entries, owner)
			changed = true
		}
	}
	if !changed {
		return
	}
	if b, err = json.Marshal(entries); err == nil {
		tmp := table + ".tmp"
		if err = os.WriteFile(tmp, b, 0o600); err == nil {
			err = os.Rename(tmp, table)
		}
	}
	if err != nil {
		t.Errorf("uid table: %v", err)
	}
}
