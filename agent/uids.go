package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Defaults of the workload user range: far above the ids a distribution
// gives to people and services, and below the 32-bit overflow ids.
const (
	DefaultWorkloadUIDBase  = 200_000
	DefaultWorkloadUIDCount = 65_536
)

// DefaultUIDTable is the machine's one table of workload user ids, shared
// by every daemon on the machine.
const DefaultUIDTable = "/var/lib/compute-agent/workload-uids.json"

// uidTable hands out workload user ids for the whole machine: every
// daemon on it takes its ids from the same file, under an exclusive lock
// (flock on <file>.lock), so two daemons never give one id to two
// allocations. An id is handed out again only once its owner released it
// and no process runs under it any more; the owner releases it after its
// container is deleted and its directory removed, and /tmp, /dev/shm and
// the work directory are the only places a workload can write, so nothing
// of the previous owner remains.
type uidTable struct {
	path        string
	base, count uint32
}

// uidEntries are the table's content: owner → id, where the owner is a
// daemon's state directory and a security domain (an allocation).
type uidEntries map[string]uint32

func uidOwner(stateDir, domain string) string { return stateDir + "#" + domain }

// locked runs fn with the table read, under the lock, and writes the
// table back when fn says it changed it.
func (t *uidTable) locked(fn func(e uidEntries) (bool, error)) error {
	if err := os.MkdirAll(filepath.Dir(t.path), 0o700); err != nil {
		return fmt.Errorf("uid table: %w", err)
	}
	lock, err := os.OpenFile(t.path+".lock", os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("uid table lock: %w", err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("uid table lock: %w", err)
	}
	e := uidEntries{}
	b, err := os.ReadFile(t.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("uid table: %w", err)
	default:
		if err := json.Unmarshal(b, &e); err != nil {
			return fmt.Errorf("uid table %s: %w", t.path, err)
		}
	}
	changed, err := fn(e)
	if err != nil || !changed {
		return err
	}
	if b, err = json.Marshal(e); err != nil {
		return err
	}
	return writeFileDurable(t.path, b, 0o600)
}

// get returns owner's id, handing out the lowest free one of the range to
// a new owner: not in the table and with no process running under it.
func (t *uidTable) get(owner string) (uint32, error) {
	var id uint32
	err := t.locked(func(e uidEntries) (bool, error) {
		if cur, ok := e[owner]; ok {
			id = cur
			return false, nil
		}
		taken := make(map[uint32]bool, len(e))
		for _, v := range e {
			taken[v] = true
		}
		running, err := processUIDs()
		if err != nil {
			return false, err
		}
		for c := t.base; c < t.base+t.count; c++ {
			if !taken[c] && !running[c] {
				id = c
				e[owner] = c
				return true, nil
			}
		}
		return false, fmt.Errorf("no free workload user id in [%d, %d)", t.base, t.base+t.count)
	})
	return id, err
}

// release gives owner's id back, once nothing of it runs: a process still
// running under the id keeps it taken.
func (t *uidTable) release(owner string) error {
	return t.locked(func(e uidEntries) (bool, error) {
		id, ok := e[owner]
		if !ok {
			return false, nil
		}
		running, err := processUIDs()
		if err != nil {
			return false, err
		}
		if running[id] {
			return false, fmt.Errorf("user id %d of %s still has processes; it stays taken", id, owner)
		}
		delete(e, owner)
		return true, nil
	})
}

// processUIDs are the real user ids of the machine's processes.
func processUIDs() (map[uint32]bool, error) {
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[uint32]bool{}
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		f, err := os.Open(filepath.Join("/proc", d.Name(), "status"))
		if err != nil {
			continue // exited meanwhile
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
				if f := strings.Fields(rest); len(f) > 0 {
					if id, err := strconv.ParseUint(f[0], 10, 32); err == nil {
						out[uint32(id)] = true
					}
				}
				break
			}
		}
		f.Close()
	}
	return out, nil
}
