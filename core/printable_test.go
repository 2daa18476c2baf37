package core_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func TestPrintable(t *testing.T) {
	for s, want := range map[string]bool{
		"":                    true,
		"alice@acme":          true,
		"NVIDIA H100 80GB":    true,
		"Müller – 東京":         true,
		"tab\there":           false,
		"line\nbreak":         false,
		"cr\rover":            false,
		"esc\x1b]0;pwned\x07": false,
		"del\x7f":             false,
		"c1\u0085":            false,
		"bidi\u202egnp.exe":   false,
		"zero\u200bwidth":     false,
		"bad\xffutf8":         false,
	} {
		require.Equal(t, want, core.Printable(s), "%q", s)
	}
}
