package agent

import (
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// deniedSyscalls are refused (EPERM) to every workload: the system calls
// Docker's and containerd's default profiles leave out that a process
// without capabilities could still reach — new user namespaces (the
// kernel's largest attack surface for an unprivileged process), keyrings
// shared across containers, BPF and perf, userfaultfd, io_uring — and the
// administrative ones, which need capabilities the container never has,
// refused twice.
var deniedSyscalls = []string{
	"unshare", "setns", "mount", "umount", "umount2", "pivot_root", "chroot",
	"keyctl", "add_key", "request_key",
	"bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot",
	"swapon", "swapoff", "acct", "quotactl", "lookup_dcookie", "open_by_handle_at", "name_to_handle_at",
	"fsopen", "fsmount", "fsconfig", "fspick", "move_mount", "open_tree", "mount_setattr",
	"syslog", "vhangup", "nfsservctl", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
}

// cloneNewUser is CLONE_NEWUSER: clone with it makes a user namespace.
const cloneNewUser = 0x10000000

// seccompProfile allows every system call but deniedSyscalls, and clone
// with CLONE_NEWUSER (clone3 is refused with ENOSYS, so that C libraries
// fall back to clone, whose flags a filter can see).
func seccompProfile() *specs.LinuxSeccomp {
	eperm, enosys := uint(1), uint(38)
	s := &specs.LinuxSeccomp{DefaultAction: specs.ActAllow, Architectures: seccompArches(),
		Syscalls: []specs.LinuxSyscall{
			{Names: deniedSyscalls, Action: specs.ActErrno, ErrnoRet: &eperm},
			{Names: []string{"clone3"}, Action: specs.ActErrno, ErrnoRet: &enosys},
		}}
	// clone's flags are its first argument on x86 and arm64 alike.
	s.Syscalls = append(s.Syscalls, specs.LinuxSyscall{Names: []string{"clone"}, Action: specs.ActErrno, ErrnoRet: &eperm,
		Args: []specs.LinuxSeccompArg{{Index: 0, Value: cloneNewUser, ValueTwo: cloneNewUser, Op: specs.OpMaskedEqual}}})
	return s
}

// seccompArches are the architectures the filter covers: the machine's
// and its 32-bit compatibility modes, so that a 32-bit call cannot go
// around it.
func seccompArches() []specs.Arch {
	switch runtime.GOARCH {
	case "arm64":
		return []specs.Arch{specs.ArchAARCH64, specs.ArchARM}
	default:
		return []specs.Arch{specs.ArchX86_64, specs.ArchX86, specs.ArchX32}
	}
}
