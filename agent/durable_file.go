package agent

import (
	"errors"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// What the daemon keeps in its state directory (its credential, the
// journal's id, the reports it has not sent, its record of running
// instances) and the machine's table of workload user ids must survive
// more than a killed daemon: a power loss too. A rename alone makes a
// replacement atomic, not durable: after a power loss the file may hold
// nothing (its data never reached the disk, though its name did), or the
// rename itself may be undone. So a file is replaced in four steps, each
// needed: written under a temporary name, fsynced (its data is on disk
// before its name points at it), renamed over the old one, and its
// directory fsynced (the rename is on disk). A crash between any two
// leaves the old content or the new, never an empty or half-written file.
// The few files that are rebuilt at every start (the fake GPUs' CDI spec,
// a container's bundle) go the same way: the cost is an fsync, and one
// way of writing a file leaves no choice to get wrong.

// writeFileDurable replaces path with b, durably (see above).
func writeFileDurable(path string, b []byte, perm os.FileMode) error {
	return writeFileDurableWith(path, b, perm, (*os.File).Sync)
}

// writeFileDurableWith is writeFileDurable with the fsync it makes, of the
// temporary file and then of the directory, given: a test sees that both
// happen, and in which order.
func writeFileDurableWith(path string, b []byte, perm os.FileMode, sync func(*os.File) error) error {
	tmp := path + ".tmp"
	// A temporary file a crash left is overwritten, never followed.
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = sync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDirWith(filepath.Dir(path), sync)
}

// syncDir makes the entries of dir durable: a file created, renamed or
// removed in it is still so after a power loss.
func syncDir(dir string) error { return syncDirWith(dir, (*os.File).Sync) }

func syncDirWith(dir string, sync func(*os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = sync(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, unix.EINVAL) {
		return nil // a file system that cannot sync a directory (some network ones) has nothing more to give
	}
	return err
}
