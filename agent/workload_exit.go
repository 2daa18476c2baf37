package agent

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// The end of an instance's own process, seen apart from the end of the
// `runc exec` that runs it. runc copies the process's output through pipes
// and, once the process has exited, returns only when those pipes close:
// a process it left running in the background with its output still open
// (`sleep 1d &`) holds them, and runc, and the instance with it, would
// wait for that process for good, while the same instance whose leftover
// wrote elsewhere ended at once. The process is runc's child, not the
// daemon's: the daemon sees it exit through a pidfd of the host pid runc
// writes to its --pid-file, and then kills what is left in the
// workload's cgroup, as it does once runc has returned (an instance ends
// with its process); the pipes close and runc returns with the process's
// exit status.

// workloadExitPoll is how often the daemon looks for the pid file runc
// writes once the process has started, and for the process's end where
// the kernel has no pollable pidfd (before Linux 5.10).
const workloadExitPoll = 50 * time.Millisecond

// endWithProcess waits for the workload's own process (the pid in
// pidFile, a process of group) to exit, and then kills every process left
// in group. It returns at once when stop is closed first (runc returned:
// what is left is its caller's to remove), and reports whether it killed
// anything, with the error of the kill.
func endWithProcess(pidFile string, group workloadCgroup, stop <-chan struct{}) (bool, error) {
	if pidFile == "" || group.path == "" {
		return false, nil
	}
	pid, ok := awaitPIDFile(pidFile, stop)
	if !ok || !awaitExit(pid, group, stop) {
		return false, nil
	}
	return true, group.kill()
}

// awaitPIDFile returns the pid in pidFile once runc has written it (it
// writes it whole, by a rename), and false if stop is closed first.
func awaitPIDFile(pidFile string, stop <-chan struct{}) (int, bool) {
	t := time.NewTicker(workloadExitPoll)
	defer t.Stop()
	for {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				return pid, true
			}
		}
		select {
		case <-stop:
			return 0, false
		case <-t.C:
		}
	}
}

// awaitExit returns true once process pid, a process of group, has
// exited (or was gone already), and false if stop is closed first. A pid
// that is no longer in group belongs to another process: the workload's
// has exited.
func awaitExit(pid int, group workloadCgroup, stop <-chan struct{}) bool {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		return pollExit(pid, group, stop)
	}
	// Opened before the check: the pidfd is of the process checked.
	if !inCgroup(pid, group.path) {
		_ = unix.Close(fd)
		return true
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return pollExit(pid, group, stop)
	}
	waited := make(chan struct{})
	go func() {
		select {
		case <-stop:
			f.Close() // ends the wait below
		case <-waited:
		}
	}()
	// The runtime's poller wakes the wait when the pidfd turns readable,
	// which it does when the process exits.
	err = rc.Read(func(fd uintptr) bool { return pidfdReadable(int(fd)) })
	close(waited)
	f.Close()
	if err == nil {
		return true
	}
	select {
	case <-stop:
		return false
	default:
		return pollExit(pid, group, stop) // a pidfd the poller cannot wait on
	}
}

// pidfdReadable reports whether the process of a pidfd has exited.
func pidfdReadable(fd int) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP|unix.POLLERR) != 0
}

// pollExit is awaitExit without a pollable pidfd: it looks every
// workloadExitPoll whether pid is gone or no longer in group.
func pollExit(pid int, group workloadCgroup, stop <-chan struct{}) bool {
	t := time.NewTicker(workloadExitPoll)
	defer t.Stop()
	for {
		if _, alive := processStart(pid); !alive || !inCgroup(pid, group.path) {
			return true
		}
		select {
		case <-stop:
			return false
		case <-t.C:
		}
	}
}
