package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/client"
)

// configFileData is the contexts file: per context a server URL and a
// token, and which context is current. It holds bearer tokens, so it is
// written with mode 0600 in a 0700 directory.
type configFileData struct {
	CurrentContext string                   `yaml:"current-context,omitempty"`
	Contexts       map[string]configContext `yaml:"contexts,omitempty"`
}

// configContext is one saved server and token.
type configContext struct {
	Server string `yaml:"server"`
	Token  string `yaml:"token"`
}

// requireContext is a usage error naming the saved contexts unless name
// is one of them.
func (f configFileData) requireContext(name string) error {
	if _, ok := f.Contexts[name]; !ok {
		return usagef("NAME: no context %q (saved: %s)", name, listOrNone(f.names()))
	}
	return nil
}

func (f configFileData) names() []string {
	out := make([]string, 0, len(f.Contexts))
	for name := range f.Contexts {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// loadConfig reads the contexts file; a missing file is no contexts.
func (c *cli) loadConfig() (configFileData, error) {
	path, err := c.configFile()
	if err != nil {
		return configFileData{}, err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return configFileData{}, nil
	}
	if err != nil {
		return configFileData{}, fmt.Errorf("read contexts: %w", err)
	}
	var f configFileData
	if err := yaml.Unmarshal(b, &f); err != nil {
		return configFileData{}, fmt.Errorf("read contexts from %s: %w", path, err)
	}
	return f, nil
}

// saveConfig writes the contexts file atomically, readable by its owner
// only.
func (c *cli) saveConfig(f configFileData) error {
	path, err := c.configFile()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	c.tightenConfigDir(filepath.Dir(path))
	b, err := yaml.Marshal(f)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save contexts: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("save contexts: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save contexts: %w", err)
	}
	return nil
}

// tightenConfigDir makes the contexts file's directory, the CLI's own
// (compute/ under the configuration directory), its owner's only (0700), as
// MkdirAll makes it when it is missing: one that already existed with
// another mode (0755, from an earlier tool or a dotfiles checkout) let
// every user of the machine list it and see when tokens were saved. Only
// that directory is changed, never the ones above it. A failure (a
// directory of another user) is said and does not stop the save: the file
// itself is 0600.
func (c *cli) tightenConfigDir(dir string) {
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		fmt.Fprintf(c.stderr, "warning: %s is mode %#o and could not be made 0700: %v\n", dir, fi.Mode().Perm(), err)
	}
}

// loginHint is how to give the CLI a server and a token.
const loginHint = "Log in with `compute login --server URL --token TOKEN`, or set COMPUTE_SERVER and COMPUTE_TOKEN."

// target is the server and token a client command uses, and where they
// came from, for messages.
type target struct {
	server, token string
	context       string // the saved context used, if any
	source        string // "context \"local\"", "COMPUTE_SERVER", …
	// login: the server and token given to compute login, not saved yet,
	// so no saved context or COMPUTE_TOKEN is to blame when they fail.
	login bool
}

// reloginHint is what to do when the server refused the token.
func (t target) reloginHint() string {
	if t.login {
		return "The token given to compute login was refused (revoked, expired, or for another server): nothing was saved."
	}
	if t.context != "" && !strings.Contains(t.source, "COMPUTE_TOKEN") {
		return fmt.Sprintf("The token of context %q was refused (revoked, or for another server): log in again with "+
			"`compute login --context %s --server %s --token TOKEN`.", t.context, t.context, t.server)
	}
	return "The token in COMPUTE_TOKEN was refused (revoked, or for another server): set a valid one, or unset it to use a saved context."
}

// resolveTarget picks the server and token: COMPUTE_SERVER and
// COMPUTE_TOKEN override the context (--context, else the current one);
// a token is never sent to a server it was not saved for.
func (c *cli) resolveTarget() (target, error) {
	envServer, envToken := strings.TrimSpace(c.getenv("COMPUTE_SERVER")), strings.TrimSpace(c.getenv("COMPUTE_TOKEN"))
	f, err := c.loadConfig()
	if err != nil {
		return target{}, err
	}
	name := c.contextName
	if name == "" {
		name = f.CurrentContext
	}
	ctxt, haveCtx := f.Contexts[name]
	if c.contextName != "" && !haveCtx {
		return target{}, usagef("--context: no context %q (saved: %s). %s", c.contextName, listOrNone(f.names()), loginHint)
	}
	t := target{server: ctxt.Server, token: ctxt.Token}
	if haveCtx {
		t.context, t.source = name, fmt.Sprintf("context %q", name)
	}
	switch {
	case envServer != "" && envToken != "":
		t = target{server: envServer, token: envToken, source: "COMPUTE_SERVER and COMPUTE_TOKEN"}
	case envServer != "":
		if !haveCtx || strings.TrimRight(ctxt.Server, "/") != strings.TrimRight(envServer, "/") {
			return target{}, f.serverAloneError(envServer, name, haveCtx)
		}
		t.source += " (COMPUTE_SERVER)"
	case envToken != "":
		if !haveCtx {
			return target{}, notLoggedInError{msg: "COMPUTE_TOKEN is set but COMPUTE_SERVER is not, and there is no current context: set COMPUTE_SERVER (such as http://localhost:8080), or run `compute login --server URL --token TOKEN`."}
		}
		t.token, t.source = envToken, t.source+" with COMPUTE_TOKEN"
	case !haveCtx && len(f.Contexts) > 0:
		// The current context was deleted, or never chosen, while others
		// are saved: "not logged in" alone would send the user to log in
		// again with a token they already saved.
		return target{}, notLoggedInError{msg: fmt.Sprintf("not logged in: no current context (saved: %s). "+
			"Pick one with `compute context use NAME`, or use --context NAME. %s", listOrNone(f.names()), loginHint)}
	case !haveCtx:
		return target{}, notLoggedInError{msg: "not logged in: no server and token to use. " + loginHint}
	}
	if t.token == "" {
		return target{}, notLoggedInError{msg: fmt.Sprintf("%s has no token. %s", t.source, loginHint)}
	}
	return t, nil
}

// serverAloneError is COMPUTE_SERVER set without COMPUTE_TOKEN to a server
// that the chosen context (name, when there is one) is not for. When other
// saved contexts are for it, it names them: "no saved context is for that
// server" sent a user who had one, just not current, to log in again.
func (f configFileData) serverAloneError(server, name string, haveCtx bool) error {
	var forIt []string
	for _, n := range f.names() {
		if strings.TrimRight(f.Contexts[n].Server, "/") == strings.TrimRight(server, "/") {
			forIt = append(forIt, n)
		}
	}
	chosen := "there is no current context"
	if haveCtx {
		chosen = fmt.Sprintf("the context in use (%s) is for %s", name, f.Contexts[name].Server)
	}
	if len(forIt) > 0 {
		return notLoggedInError{msg: fmt.Sprintf("COMPUTE_SERVER is set (%s) but COMPUTE_TOKEN is not, and %s. "+
			"Saved for that server: %s; use it with --context %s (or `compute context use %s`), or set COMPUTE_TOKEN.",
			server, chosen, strings.Join(forIt, ", "), forIt[0], forIt[0])}
	}
	return notLoggedInError{msg: fmt.Sprintf("COMPUTE_SERVER is set (%s) but COMPUTE_TOKEN is not, and no saved context is for that server. "+
		"Set COMPUTE_TOKEN, or run `compute login --server %s --token TOKEN`.", server, server)}
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// api is the client of the resolved target.
func (c *cli) api() (*client.API, target, error) {
	t, err := c.resolveTarget()
	if err != nil {
		return nil, target{}, err
	}
	api, err := client.New(t.server, t.token, client.Options{UserAgent: c.userAgent()})
	if err != nil {
		return nil, target{}, fmt.Errorf("%s: %w", t.source, err)
	}
	return api, t, nil
}
