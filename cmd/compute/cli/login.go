package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/bettercompute/compute/client"
)

// defaultServer is where login points without --server or COMPUTE_SERVER:
// `compute serve` on this machine.
const defaultServer = "http://localhost:8080"

func (c *cli) loginCmd() *cobra.Command {
	var server, token, name string
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Save a server URL and token as a context and make it current",
		Long: `login checks the token against the server (GET /v1/whoami) and saves the
server URL and token as a context in os.UserConfigDir()/compute/config.yaml
(on Linux ~/.config/compute/config.yaml; mode 0600), then makes it the
current context. Later commands use it unless COMPUTE_SERVER and
COMPUTE_TOKEN are set. --server is the API's base URL (http://host:8080, or
https://example.com/compute behind a proxy): one with a query or a fragment,
or holding a path of the API (/v1…), is refused before anything is sent.

The token comes from --token, --token-stdin or COMPUTE_TOKEN. A token on
the command line is visible to other users of the machine in the process
list; prefer --token-stdin or COMPUTE_TOKEN on a shared machine.`,
		Example: `  compute login --server http://localhost:8080 --token bc_…
  echo "$TOKEN" | compute login --context prod --server https://compute.example.com --token-stdin`,
		Args: NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				server = strings.TrimSpace(c.getenv("COMPUTE_SERVER"))
			}
			if server == "" {
				server = defaultServer
			}
			if u, err := url.Parse(server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return usagef("--server: %q is not a server URL: want http://host:port or https://host", server)
			} else if u.User != nil {
				// It would be saved and printed with the URL, and never sent:
				// the token is the Authorization.
				return usagef("--server: %s: a server URL has no user name or password; the token is the only credential", u.Redacted())
			} else if err := apiRoot(server, u); err != nil {
				return err
			}
			server = strings.TrimRight(server, "/")
			if u, _ := url.Parse(server); u.Scheme == "http" && !loopbackHost(u.Hostname()) {
				fmt.Fprintf(c.stderr, "warning: %s is plain http: the token crosses the network unencrypted; use https:// for a server on another machine\n", server)
			}
			switch {
			case fromStdin && token != "":
				return usagef("--token-stdin: give the token either on stdin or with --token, not both")
			case fromStdin:
				line, err := bufio.NewReader(c.stdin).ReadString('\n')
				if err != nil && line == "" {
					return usagef("--token-stdin: no token on standard input")
				}
				token = strings.TrimSpace(line)
			case token == "":
				token = strings.TrimSpace(c.getenv("COMPUTE_TOKEN"))
			}
			if token == "" {
				return usagef("--token: missing: give the token with --token, --token-stdin or COMPUTE_TOKEN")
			}
			if name == "" {
				name = c.contextName
			}
			if name == "" {
				name = contextNameFor(server)
			}
			if strings.ContainsAny(name, " \t\n") {
				return usagef("--context: %q: a context name has no white space", name)
			}
			api, err := client.New(server, token, client.Options{UserAgent: c.userAgent()})
			if err != nil {
				return usagef("--token: %v", err)
			}
			t := target{server: server, token: token, context: name, source: "compute login", login: true}
			who, err := api.WhoamiWithResponse(cmd.Context())
			if client.IsCode(err, client.ErrorCodeNOTFOUND) {
				// The API answered, but has no /v1/whoami under this URL:
				// its path is not the API's root.
				err = hintedError{err: err, hint: fmt.Sprintf("%s/v1/whoami is not the API's: --server is the URL the API's "+
					"paths (/v1/…) go under, such as http://host:8080. Nothing was saved.", server)}
			}
			if err != nil {
				return apiCallError{err: err, target: t}
			}
			f, err := c.loadConfig()
			if err != nil {
				return err
			}
			if f.Contexts == nil {
				f.Contexts = map[string]configContext{}
			}
			f.Contexts[name] = configContext{Server: server, Token: token}
			f.CurrentContext = name
			if err := c.saveConfig(f); err != nil {
				return err
			}
			w := who.JSON200
			fmt.Fprintf(c.stdout, "Logged in to %s as %s (tenant %s, role %s); context %q is current.\n",
				server, terminalSafe(w.Identity), terminalSafe(w.Tenant), terminalSafe(string(w.Role)), name)
			return nil
		},
	}
	cmd.Flags().StringVar(&server, "server", "", "the API's base URL (default COMPUTE_SERVER, else "+defaultServer+")")
	cmd.Flags().StringVar(&token, "token", "", "the API token (default COMPUTE_TOKEN)")
	cmd.Flags().BoolVar(&fromStdin, "token-stdin", false, "read the token from the first line of standard input")
	cmd.Flags().StringVar(&name, "name", "", "the context's name (default --context, else the server's host:port)")
	return cmd
}

// apiRoot refuses a server URL that cannot be the root the API's paths go
// under: one with a query or a fragment (the client appends /v1/… to the
// URL as given, so a query would end up inside the path; and both would be
// saved with the context), or one holding a path of the API itself (/v1,
// /v1/whoami, …), whose requests would go to /v1/v1/….
func apiRoot(server string, u *url.URL) error {
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(server, "#") {
		return usagef("--server: %q has a query or a fragment: give the API's base URL alone, such as %s://%s%s",
			server, u.Scheme, u.Host, strings.TrimRight(u.EscapedPath(), "/"))
	}
	p := strings.TrimRight(u.EscapedPath(), "/")
	at := strings.Index(p+"/", "/v1/")
	if at < 0 {
		return nil
	}
	return usagef("--server: %q holds a path of the API (%s): give the API's base URL, such as %s://%s%s",
		server, p[at:], u.Scheme, u.Host, p[:at])
}

// contextNameFor names a context after its server: host:port.
func contextNameFor(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "default"
	}
	return u.Host
}

func (c *cli) contextCmd() *cobra.Command {
	show := func(cmd *cobra.Command, _ []string) error {
		f, err := c.loadConfig()
		if err != nil {
			return err
		}
		t, err := c.resolveTarget()
		if err != nil {
			return err
		}
		if c.output != "table" {
			// What a script reads: the same facts, in the format asked for.
			body, err := json.Marshal(struct {
				Server  string `json:"server"`
				From    string `json:"from"`
				Context string `json:"context,omitempty"`
			}{t.server, t.source, t.context})
			if err != nil {
				return err
			}
			return c.show(body, nil)
		}
		fmt.Fprintf(c.stdout, "server: %s\nfrom:   %s\n", t.server, t.source)
		if t.context == "" && len(f.Contexts) > 0 {
			fmt.Fprintf(c.stdout, "(saved contexts: %s)\n", strings.Join(f.names(), ", "))
		}
		return nil
	}
	cmd := &cobra.Command{
		Use:   "context",
		Short: "Show, list, switch and delete saved contexts",
		Long: `A context is a server URL and a token saved by compute login. Without a
subcommand, context shows which server the client commands use and why
(COMPUTE_SERVER and COMPUTE_TOKEN override the current context).`,
		Args: NoArgs,
		RunE: show,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List saved contexts (the current one starred)",
		Args:  NoArgs,
		RunE: func(*cobra.Command, []string) error {
			f, err := c.loadConfig()
			if err != nil {
				return err
			}
			t := table{header: []string{"CURRENT", "NAME", "SERVER"}}
			for _, name := range f.names() {
				cur := ""
				if name == f.CurrentContext {
					cur = "*"
				}
				t.add(cur, name, f.Contexts[name].Server)
			}
			body, err := contextsJSON(f)
			if err != nil {
				return err
			}
			return c.show(body, func() (table, error) { return t, nil })
		},
	}, &cobra.Command{
		Use:               "use NAME",
		Short:             "Make a saved context current",
		Args:              ArgsNamed("NAME"),
		ValidArgsFunction: c.completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := c.loadConfig()
			if err != nil {
				return err
			}
			if err := f.requireContext(args[0]); err != nil {
				return err
			}
			f.CurrentContext = args[0]
			if err := c.saveConfig(f); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Context %q is current (%s).\n", args[0], f.Contexts[args[0]].Server)
			return nil
		},
	}, &cobra.Command{
		Use:               "delete NAME",
		Short:             "Forget a saved context and its token",
		Args:              ArgsNamed("NAME"),
		ValidArgsFunction: c.completeContexts,
		RunE: func(_ *cobra.Command, args []string) error {
			f, err := c.loadConfig()
			if err != nil {
				return err
			}
			if err := f.requireContext(args[0]); err != nil {
				return err
			}
			delete(f.Contexts, args[0])
			if f.CurrentContext == args[0] {
				f.CurrentContext = ""
			}
			if err := c.saveConfig(f); err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "Context %q deleted.\n", args[0])
			return nil
		},
	})
	return cmd
}

func (c *cli) completeContexts(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	f, err := c.loadConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	return f.names(), cobra.ShellCompDirectiveNoFileComp
}

// contextsJSON is `context list` for -o json and yaml: names, servers and
// which is current, never the tokens.
func contextsJSON(f configFileData) ([]byte, error) {
	type item struct {
		Name    string `json:"name"`
		Server  string `json:"server"`
		Current bool   `json:"current"`
	}
	items := []item{}
	for _, name := range f.names() {
		items = append(items, item{Name: name, Server: f.Contexts[name].Server, Current: name == f.CurrentContext})
	}
	return json.Marshal(map[string]any{"items": items})
}

func (c *cli) whoamiCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the tenant, identity and role of the token in use",
		Args:  NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.call(cmd, func(ctx context.Context, api *client.API) error {
				res, err := api.WhoamiWithResponse(ctx)
				if err != nil {
					return err
				}
				return showOne(c, res.Body, func(w client.Whoami) table {
					return table{header: []string{"TENANT", "IDENTITY", "ROLE", "TOKEN", "SERVER"},
						rows: [][]string{{w.Tenant, w.Identity, string(w.Role), w.TokenID, api.Server()}}}
				})
			})
		},
	}
}

// loopbackHost reports whether host (a URL's host name, without port)
// names this machine: localhost or a loopback address, where plain http
// keeps the token on the machine.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
