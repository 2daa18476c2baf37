package agent

import (
	"context"
	"os/exec"
	"strconv"
	"time"
)

// The keeper's program. The keeper is the container's first process: when
// it exits, the kernel kills every other process of the container, so it
// must exit at its deadline (keeper_deadline.go) and never before. A
// shell is the one program every node has, and the container sees the
// node's /bin and /usr.
//
// A shell exits when it cannot fork: dash at once ("Cannot fork"), bash
// after retrying for 15 s (measured: exit status 254). The keeper under
// dash forks a `sleep` between two looks at its deadline, so a workload
// that held every process its allocation's pids limit allows when the
// keeper's sleep ended took that slot, the keeper exited, and the
// container ended long before its window did (measured under runc,
// TestKeeperOutlivesAWorkloadHoldingEveryPid with a dash keeper: ended
// within seconds of the workload reaching its limit, 4 runs of 4, at a
// 5 s poll as at a 0.1 s one). Under bash the keeper forks once, when it starts, and never
// again: it waits with `read -t` on a pipe it holds both ends of (nothing
// ever arrives, so the read times out after the poll), reads its clock
// and deadlines with `read`, and the wall clock, where it needs it, with
// `printf '%(%s)T'`; all of them builtins. So the daemon runs the keeper
// under bash where the node has a bash that can (keeperShellHere), and
// under /bin/sh elsewhere, where that limit remains. Bash costs its
// allocation's memory a little more (measured as a container's keeper:
// 280 kB of anonymous memory against dash's 112 kB; the container's
// cgroup, keeper alone, 1.06 MB against 0.94 MB).

// keeperShell is the shell a keeper's program is written for.
type keeperShell string

const (
	// keeperSh is the node's /bin/sh (dash on Debian and Ubuntu): it
	// waits with a `sleep` it forks at every poll.
	keeperSh keeperShell = "/bin/sh"
	// keeperBash forks nothing once it has started.
	keeperBash keeperShell = "/bin/bash"
)

// keeperArgs is the keeper's command line: its program (keeperProgram)
// under the shell sh, reading its deadlines in dir and the boot clock in
// uptime, every poll.
func keeperArgs(sh keeperShell, dir, uptime string, poll time.Duration) []string {
	return []string{string(sh), "-c", keeperProgram(sh, dir, uptime, strconv.FormatFloat(poll.Seconds(), 'f', -1, 64))}
}

// keeperProgram is the keeper's program for the shell sh, reading its
// deadlines in dir and the boot clock in uptime, every poll seconds
// (parameters only so that tests can run it outside a container). It
// ignores SIGTERM (a stop's TERM is for the workloads), reaps what is
// orphaned into it, and exits once the boot clock reaches the deadline in
// keeperBootDeadline. A deadline or clock it cannot read (none, not a
// number) is no deadline. A keeperWallDeadline there as well, which only
// an earlier daemon makes (the node downgraded to one), holds it until the
// wall clock reaches that too: such a daemon moves only that file when it
// extends the window. It reads with the shell's own `read`. Under
// keeperSh it forks its sleep at every poll (and `date` after a
// downgrade); under keeperBash nothing after its start, where it opens
// the pipe it waits on (the one fork: a process substitution whose
// process exits at once), falling back to a sleep it forks were that to
// fail, rather than spinning.
func keeperProgram(sh keeperShell, dir, uptime, poll string) string {
	start, wallNow, nap := "", `"$(date +%s)"`, "sleep "+poll+" & wait"
	if sh == keeperBash {
		start = "if exec 3<> <(:); then nap() { read -r -t " + poll + " -u 3 _; }; else nap() { sleep " + poll +
			" & wait; }; fi 2>/dev/null; "
		wallNow, nap = `"$t"`, "nap"
	}
	wallPassed := "[ " + wallNow + ` -lt "$w" ]`
	if sh == keeperBash {
		wallPassed = `{ printf -v t '%(%s)T' -1; ` + wallPassed + "; }"
	}
	return "trap '' TERM; num() { case \"$1\" in ''|*[!0-9]*) return 1;; esac; }; " + start + "while :; do " +
		"b= w= u=; { read -r b _ <" + dir + "/" + keeperBootDeadline + "; read -r w <" + dir + "/" + keeperWallDeadline +
		"; read -r u _ <" + uptime + "; } 2>/dev/null; u=${u%.*}; " +
		`if num "$b" && num "$u" && [ "$u" -ge "$b" ]; then num "$w" && ` + wallPassed + " || exit 0; fi; " +
		nap + "; done"
}

// keeperBashProbe is what keeperBash must do for the keeper: open its
// pipe, time out reading it, and print the wall clock, all without an
// external command.
const keeperBashProbe = `exec 3<> <(:) || exit 1; read -r -t 0.01 -u 3 _; [ $? -gt 128 ] || exit 2; ` +
	`printf -v t '%(%s)T' -1; case "$t" in ''|*[!0-9]*) exit 3;; esac`

// keeperShellHere is the shell this node's keepers run under: keeperBash
// where the node has one that does what its program needs (bash 4.2 and
// later), keeperSh elsewhere, and why not bash ("": bash).
func keeperShellHere(ctx context.Context) (keeperShell, string) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, string(keeperBash), "-c", keeperBashProbe).CombinedOutput()
	if err != nil {
		why := err.Error()
		if len(out) > 0 {
			why += ": " + string(out)
		}
		return keeperSh, why
	}
	return keeperBash, ""
}
