package agent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// A durable write fsyncs the new file before the rename puts it in place,
// and the directory after it: the data is on disk before a name points at
// it, and the name is on disk before the write returns. Without either, a
// power loss can leave an empty file under the name, or the old one.
func TestWriteFileDurableSyncsTheFileThenTheDirectory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, unsentFile)
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))

	type step struct{ synced, atPath string }
	var steps []step
	record := func(f *os.File) error {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		steps = append(steps, step{f.Name(), string(b)})
		return f.Sync()
	}
	require.NoError(t, writeFileDurableWith(path, []byte("new"), 0o600, record))

	require.Equal(t, []step{{path + ".tmp", "old"}, {dir, "new"}}, steps,
		"the file is synced before it replaces the old one, the directory after")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(b))
	require.NoFileExists(t, path+".tmp")
}

// A failed fsync is the write's failure: the old file stays as it was and
// no temporary file is left.
func TestWriteFileDurableKeepsTheOldFileWhenTheSyncFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, registryFile)
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	failed := errors.New("EIO")
	err := writeFileDurableWith(path, []byte("new"), 0o600, func(*os.File) error { return failed })
	require.ErrorIs(t, err, failed)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
	require.NoFileExists(t, path+".tmp")
}

// crashAtEnv names the step at which the child process of
// TestWriteFileDurableSurvivesACrashBetweenSteps kills itself.
const crashAtEnv = "COMPUTE_TEST_DURABLE_CRASH_AT"

// A process killed between the steps of a durable write (here by
// SIGKILL, in a process of its own, after the file's fsync and before the
// rename; after the rename and before the directory's fsync) leaves the
// old content or the new one, whole, under the name, and the next write
// goes through over the temporary file it left.
func TestWriteFileDurableSurvivesACrashBetweenSteps(t *testing.T) {
	if at := os.Getenv(crashAtEnv); at != "" {
		path := os.Getenv(crashAtEnv + "_PATH")
		_ = writeFileDurableWith(path, []byte("new"), 0o600, func(f *os.File) error {
			if err := f.Sync(); err != nil {
				return err
			}
			if (at == "file" && f.Name() == path+".tmp") || (at == "dir" && f.Name() == filepath.Dir(path)) {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {}
			}
			return nil
		})
		t.Fatal("the write was not cut short")
	}
	for at, want := range map[string]string{"file": "old", "dir": "new"} {
		t.Run("after the "+at+" sync", func(t *testing.T) {
			path := credentialPath(Config{StateDir: t.TempDir()})
			require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
			cmd := exec.Command(os.Args[0], "-test.run=^TestWriteFileDurableSurvivesACrashBetweenSteps$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashAtEnv+"="+at, crashAtEnv+"_PATH="+path)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, string(out))
			require.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal(), string(out))

			b, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, want, string(b), "a crash leaves one whole version")
			require.NoError(t, writeFileDurable(path, []byte("next"), 0o600))
			b, err = os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, "next", string(b))
			require.NoFileExists(t, path+".tmp")
		})
	}
}
