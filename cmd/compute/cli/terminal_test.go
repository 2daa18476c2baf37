package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostile is what a tenant can put in its instance's command, and what a
// node's daemon or a server can put in any string: an OSC that retitles
// the window, a screen clear, an OSC 52 clipboard write, an OSC 8 hidden
// link, a carriage return that overwrites the line, a bidirectional
// override, a tab and a newline that break the table, a C1 CSI, and a byte
// of invalid UTF-8.
const hostile = "sleep 1 #\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\a\x1b]8;;http://evil/\aclick\x1b]8;;\a\rX\u202egnp.exe\tcol\nrow\u009b31m\xff"

// No table cell, error message or login line lets a terminal sequence from
// the server through: an operator listing a tenant's instances sees the
// escape sequences written out, not acted on; JSON keeps the value intact.
func TestTableAndErrorsEscapeTerminalSequences(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		cmd, _ := json.Marshal(strings.ToValidUTF8(hostile, "\uFFFD"))
		switch r.URL.Path {
		case "/v1/instances":
			fmt.Fprintf(w, `{"items":[{"id":"ins_1","state":"running","reservationId":"rsv_1","nodeId":"n1","spec":{"command":%s},"reason":%s}]}`,
				cmd, cmd)
		case "/v1/whoami":
			fmt.Fprintf(w, `{"tenant":"acme","identity":%s,"role":"member","tokenId":"tok_1"}`, cmd)
		default:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"code":"NOT_FOUND","message":%s}}`, cmd)
		}
	}))
	t.Cleanup(srv.Close)
	inv := newInvocation(t, "COMPUTE_SERVER="+srv.URL, "COMPUTE_TOKEN=bc_test")

	noControls := func(s string) {
		t.Helper()
		for _, r := range s {
			require.False(t, r != '\n' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e'),
				"control character %U reaches the terminal: %q", r, s)
		}
	}
	out, errOut, code := inv.run("instances", "list", "--reservation", "rsv_1")
	require.Zero(t, code, errOut)
	noControls(out)
	require.Len(t, strings.Split(strings.TrimSpace(out), "\n"), 2, "one header, one row: %s", out)
	require.Contains(t, out, `sleep 1 #\x1b]0;pwned\a\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\a`)
	require.Contains(t, out, `\rX\u202egnp.exe\tcol\nrow\u009b31m`)

	out, errOut, code = inv.run("instances", "list", "--reservation", "rsv_1", "-o", "json")
	require.Zero(t, code, errOut)
	var page struct {
		Items []struct {
			Spec struct{ Command string } `json:"spec"`
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &page))
	require.Equal(t, strings.ToValidUTF8(hostile, "\uFFFD"), page.Items[0].Spec.Command)

	_, errOut, code = inv.run("instances", "get", "ins_gone")
	require.Equal(t, exitNotFound, code, errOut)
	noControls(errOut)
	require.Contains(t, errOut, `\x1b]0;pwned`)

	out, errOut, code = inv.run("login", "--server", srv.URL, "--token", "bc_test")
	require.Zero(t, code, errOut)
	noControls(out)
}

func TestTerminalSafe(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                        "",
		"plain text, ünïcode 日本":  "plain text, ünïcode 日本",
		"a\x1b[2Jb":               `a\x1b[2Jb`,
		"\x07\x7f\r\n\t":          `\a\x7f\r\n\t`,
		"\u009b1m":                `\u009b1m`,
		"a\u202ebc\u2066d":        `a\u202ebc\u2066d`,
		"bad \xff\xfe utf-8":      `bad \xff\xfe utf-8`,
		"replacement \uFFFD kept": "replacement \uFFFD kept",
	} {
		require.Equal(t, want, terminalSafe(in), "%q", in)
	}
}
