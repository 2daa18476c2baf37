package core

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestClip(t *testing.T) {
	require.Equal(t, "short", Clip("short", 5))
	require.Equal(t, "abc…", Clip("abcdef", 3))
	// A cut never splits a character: é is two bytes.
	got := Clip(strings.Repeat("é", 10), 5)
	require.True(t, utf8.ValidString(got), got)
	require.Equal(t, "éé…", got)
}
