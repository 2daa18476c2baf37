package commands_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/commands"
	"github.com/bettercompute/compute/core"
)

// Every role reads sites (GET /v1/sites) and their events, so a site's
// name is held to what every shown text is: 1 to MaxSiteName bytes of
// printable UTF-8, and not blank (docs/concepts/capacity.md). A refused create writes nothing and appends nothing.
func TestCreateSiteRefusesUnprintableOrLongNames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for name, siteName := range map[string]string{
		"terminal escape": "\x1b]0;pwned\x07",
		"newline":         "Frankfurt\nBerlin",
		"bidi override":   "\u202eFrankfurt",
		"invalid UTF-8":   "Frankfurt \xff",
		"too long":        strings.Repeat("x", core.MaxSiteName+1),
		"blank":           "   ",
	} {
		_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "ber1", Name: siteName})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "%s: %v", name, err)
		require.ErrorContains(t, err, "name", name)
	}
	_, err := f.d.Q.SiteGet(f.ctx, "ber1")
	require.Error(t, err, "no site was created")
	require.Equal(t, 1, f.countEvents(t, core.EventSiteCreated), "only the fixture's site")

	// The longest name, and names in any script, are fine.
	res, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "ber1", Name: strings.Repeat("é", core.MaxSiteName/2)})
	require.NoError(t, err)
	require.Len(t, res.Name, core.MaxSiteName)
	f.requireInvariants(t)
}
