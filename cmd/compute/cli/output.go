package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/bettercompute/compute/client"
)

// table is what -o table prints: a header and rows, aligned in columns.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// show prints an API answer in the chosen format: its JSON body as the
// server sent it (indented), the same as YAML, or the rows of tab.
func (c *cli) show(body []byte, tab func() (table, error)) error {
	switch c.output {
	case "json":
		var out bytes.Buffer
		if err := json.Indent(&out, bytes.TrimSpace(body), "", "  "); err != nil {
			return fmt.Errorf("the server's answer is not JSON: %w", err)
		}
		out.WriteByte('\n')
		_, err := c.stdout.Write(out.Bytes())
		return err
	case "yaml":
		b, err := jsonToYAML(body)
		if err != nil {
			return err
		}
		_, err = c.stdout.Write(b)
		return err
	}
	t, err := tab()
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, strings.Join(t.header, "\t"))
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, cell := range r {
			cells[i] = terminalSafe(cell)
		}
		fmt.Fprintln(w, strings.Join(cells, "\t"))
	}
	return w.Flush()
}

// terminalSafe is s with every character that a terminal would act on
// instead of showing written as a Go escape: C0 and C1 controls (ESC opens
// the sequences that retitle the window, clear or redraw the screen, write
// the clipboard or make hidden links; CR overwrites the line; a tab or a
// newline would break the table), DEL, the bidirectional overrides and the
// other invisible format characters (U+202E shows "exe.txt" as "txt.exe"),
// and each byte of invalid UTF-8. A table cell or an error message can hold
// what a tenant typed (an instance's command), what a node's daemon reported
// (an instance's reason) or what any server answered; printed as is, it
// would reach the operator's terminal as commands. JSON and YAML output
// escape these themselves.
func terminalSafe(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r == utf8.RuneError || !unicode.IsPrint(r) }) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\x1b', '\r', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

// showOne is show for an answer of type T.
func showOne[T any](c *cli, body []byte, tab func(T) table) error {
	return c.show(body, func() (table, error) {
		var v T
		if err := json.Unmarshal(body, &v); err != nil {
			return table{}, fmt.Errorf("decode the server's answer: %w", err)
		}
		return tab(v), nil
	})
}

// jsonToYAML re-renders JSON as block-style YAML, keeping the order of
// keys and the spelling of numbers.
func jsonToYAML(body []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(body, &n); err != nil {
		return nil, fmt.Errorf("the server's answer is not JSON: %w", err)
	}
	blockStyle(&n)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&n); err != nil {
		return nil, err
	}
	return out.Bytes(), enc.Close()
}

func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = 0
	}
	if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle {
		n.Style = 0 // the encoder quotes what needs it
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// pageFlags are the paging flags of a list command.
type pageFlags struct {
	limit  int
	cursor string
	all    bool
}

func addPageFlags(cmd *cobra.Command, p *pageFlags) {
	cmd.Flags().IntVar(&p.limit, "limit", 0, "items per page (the server's default when 0)")
	cmd.Flags().StringVar(&p.cursor, "cursor", "", "continue from this nextCursor")
	cmd.Flags().BoolVar(&p.all, "all", false, "follow nextCursor through every page")
	cmd.PreRunE = func(*cobra.Command, []string) error { // bad input before asking for a server
		_, _, err := p.params()
		return err
	}
}

// params returns the limit and cursor to send, checking them.
func (p pageFlags) params() (*int, *string, error) {
	if p.limit < 0 {
		return nil, nil, usagef("--limit: %d is negative", p.limit)
	}
	var limit *int
	if p.limit > 0 {
		limit = &p.limit
	}
	var cursor *string
	if p.cursor != "" {
		cursor = &p.cursor
	}
	return limit, cursor, nil
}

// rawPage is a page of any list, items kept as sent.
type rawPage struct {
	Items      []json.RawMessage `json:"items"`
	NextCursor string            `json:"nextCursor"`
}

// list fetches one page, or with --all every page, and shows the items;
// fetch returns a page's body given the cursor to send. With more pages
// left and no --all, the cursor to continue with goes to stderr under a
// table (in JSON and YAML it is the page's nextCursor).
func list[T any](ctx context.Context, c *cli, p pageFlags, fetch func(ctx context.Context, limit *int, cursor *string) ([]byte, error),
	row func(T) []string, header ...string) error {
	limit, cursor, err := p.params()
	if err != nil {
		return err
	}
	var all rawPage
	var body []byte
	for {
		b, err := fetch(ctx, limit, cursor)
		if err != nil {
			return err
		}
		var page rawPage
		if err := json.Unmarshal(b, &page); err != nil {
			return fmt.Errorf("decode the server's answer: %w", err)
		}
		all.Items = append(all.Items, page.Items...)
		all.NextCursor = page.NextCursor
		body = b
		if !p.all || page.NextCursor == "" || (cursor != nil && *cursor == page.NextCursor) {
			break
		}
		next := page.NextCursor
		cursor = &next
	}
	if p.all {
		all.NextCursor = ""
		if all.Items == nil {
			all.Items = []json.RawMessage{}
		}
		if body, err = json.Marshal(all); err != nil {
			return err
		}
	}
	err = c.show(body, func() (table, error) {
		t := table{header: header}
		for _, raw := range all.Items {
			var v T
			if err := json.Unmarshal(raw, &v); err != nil {
				return table{}, fmt.Errorf("decode the server's answer: %w", err)
			}
			t.add(row(v)...)
		}
		return t, nil
	})
	if err == nil && c.output == "table" && all.NextCursor != "" {
		fmt.Fprintf(c.stderr, "more: --cursor %s (or --all)\n", all.NextCursor)
	}
	return err
}

// Cell formatting for tables.

// ptrOr is *p, or T's zero value when p is nil.
func ptrOr[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func str(p *string) string {
	if p == nil || *p == "" {
		return "-"
	}
	return *p
}

func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func tsp(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return ts(*t)
}

func itoa[T ~int | ~int64](n T) string { return strconv.FormatInt(int64(n), 10) }

func joinOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ",")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// call runs f with the client of the resolved target; an error of the call
// carries the target, for the message.
func (c *cli) call(cmd *cobra.Command, f func(ctx context.Context, api *client.API) error) error {
	api, t, err := c.api()
	if err != nil {
		return err
	}
	if err := f(cmd.Context(), api); err != nil {
		return apiCallError{err: err, target: t}
	}
	return nil
}

// jsonItems is the JSON of a list the CLI assembled itself, shaped like the
// API's pages.
func jsonItems[T any](items []T) ([]byte, error) {
	return json.Marshal(struct {
		Items []T `json:"items"`
	}{items})
}
