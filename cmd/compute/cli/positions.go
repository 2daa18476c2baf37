package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/bettercompute/compute/client"
)

// The CLI reads its own writes. A command that writes answers with the
// position of its last event; the read models are updated from the log a
// moment later, so `reservations create` followed at once by
// `reservations get` could be told "not found". So the CLI keeps the last
// position it was given, per server and token (a fresh database has fresh
// tokens: a position of an old one is never waited for), next to its
// contexts file, and passes it as minPosition on the reads of read
// models: the server waits until the read model has applied it.

// positionsFile holds the last positions, by target.
const positionsFile = "positions.json"

// targetKey names a server and token without writing the token down.
func targetKey(t target) string {
	sum := sha256.Sum256([]byte(t.server + "\x00" + t.token))
	return hex.EncodeToString(sum[:12])
}

func (c *cli) positionsPath() (string, error) {
	cfg, err := c.configFile()
	if err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(cfg), positionsFile), nil
}

// notePosition keeps the position a write's answer carries (a JSON body
// with a top-level "position"); anything else is ignored. A failure to
// keep it costs only read-your-writes, never the command.
func (c *cli) notePosition(body []byte) {
	var res struct {
		Position string `json:"position"`
	}
	if json.Unmarshal(body, &res) != nil || res.Position == "" {
		return
	}
	t, err := c.resolveTarget()
	if err != nil {
		return
	}
	path, err := c.positionsPath()
	if err != nil {
		return
	}
	all := c.positions(path)
	all[targetKey(t)] = res.Position
	savePositions(path, all)
}

// savePositions replaces the positions file; a failure is ignored, as it
// costs only read-your-writes.
func savePositions(path string, all map[string]string) {
	b, err := json.Marshal(all)
	if err != nil || os.MkdirAll(filepath.Dir(path), 0o700) != nil {
		return
	}
	tmp := path + ".tmp"
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, path)
	}
}

// lastPosition is the last position a write to the current target
// answered with, or nil.
func (c *cli) lastPosition() *string {
	t, err := c.resolveTarget()
	if err != nil {
		return nil
	}
	path, err := c.positionsPath()
	if err != nil {
		return nil
	}
	if p, ok := c.positions(path)[targetKey(t)]; ok && p != "" {
		return &p
	}
	return nil
}

func (c *cli) positions(path string) map[string]string {
	out := map[string]string{}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &out)
	}
	return out
}

// refusedOwnPosition says whether a read's error refused the position this
// CLI passed from its store: 400 INVALID_ARGUMENT about minPosition, which
// the server answers for a write its event log does not have (its
// database was restored to a point before it, or the server is another
// installation behind the same address). No read would ever show that
// write, and every read of this target would be refused until the next
// write replaced it: so the CLI forgets it, says so, and the caller reads
// again without it.
func (c *cli) refusedOwnPosition(err error) bool {
	var e *client.APIError
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest ||
		e.Code != client.ErrorCodeINVALIDARGUMENT || !strings.HasPrefix(e.Message, "minPosition ") {
		return false
	}
	t, terr := c.resolveTarget()
	if terr != nil {
		return false
	}
	path, perr := c.positionsPath()
	if perr != nil {
		return false
	}
	all := c.positions(path)
	delete(all, targetKey(t))
	savePositions(path, all)
	fmt.Fprintf(c.stderr, "compute: the server's event log does not have this CLI's last write to it (%s); reading without waiting for it\n",
		terminalSafe(e.Message))
	return true
}
