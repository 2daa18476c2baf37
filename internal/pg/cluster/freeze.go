package cluster

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Freeze stops every process of the server (SIGSTOP: the postmaster and
// its children) for fault tests, the way a frozen machine or a stalled
// disk does: connections stay open, the kernel keeps them alive, and
// nothing answers on them; a new connection is accepted and never served.
// The returned thaw (SIGCONT) lets them go on; call it before Stop.
func (c *Cluster) Freeze() (thaw func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.pid == 0 {
		return nil, errors.New("pgcluster: Freeze of a server that is not running")
	}
	pids := []int{c.pid}
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.pid, c.pid))
	if err != nil {
		return nil, fmt.Errorf("pgcluster: the server's processes: %w", err)
	}
	for _, f := range strings.Fields(string(children)) {
		if p, err := strconv.Atoi(f); err == nil {
			pids = append(pids, p)
		}
	}
	thaw = func() {
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGCONT)
		}
	}
	for _, p := range pids {
		if err := syscall.Kill(p, syscall.SIGSTOP); err != nil {
			thaw()
			return nil, fmt.Errorf("pgcluster: stop process %d: %w", p, err)
		}
	}
	return thaw, nil
}
