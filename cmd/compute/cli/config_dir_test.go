package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Saving contexts makes an existing compute/ directory of another mode
// (0755, left by an earlier tool or a dotfiles checkout) its owner's only,
// as one the CLI creates is: it stayed 0755 while the file in it was 0600,
// so every user of the machine could list it. The directory above it is
// not the CLI's and keeps its mode.
func TestSavingContextsTightensTheCLIsDirectory(t *testing.T) {
	t.Parallel()
	api := whoamiServer(t, "bc_a")
	inv := newInvocation(t)
	dir := filepath.Dir(inv.configPath)
	parent := filepath.Dir(dir)
	require.NoError(t, os.Chmod(parent, 0o755))
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Chmod(dir, 0o755)) // whatever the umask

	_, errOut, code := inv.run("login", "--server", api.URL, "--token", "bc_a", "--name", "a")
	require.Zero(t, code, errOut)
	require.Empty(t, errOut)
	di, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
	pi, err := os.Stat(parent)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o755), pi.Mode().Perm(), "only the CLI's own directory")

	// Any save does it, not only login's.
	require.NoError(t, os.Chmod(dir, 0o750))
	_, errOut, code = inv.run("context", "use", "a")
	require.Zero(t, code, errOut)
	di, err = os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
}
