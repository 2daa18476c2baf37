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

// An id the sites or pools table's CHECK would refuse is refused before
// anything is written, with the rule in words, as node and tenant ids are:
// the constraint's name alone ("it breaks the rule sites_id_check") left an
// operator who typed `compute sites create "Bad Id"` guessing what an id
// may hold.
func TestCreateSiteAndPoolRefuseMalformedIDsWithTheRule(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pools := f.countEvents(t, core.EventPoolCreated)
	for _, id := range []string{"Bad Id", "FRA1", "-fra1", "fra_1", "fra1.a", strings.Repeat("a", 64)} {
		_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: id, Name: "Frankfurt"})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "site %q: %v", id, err)
		require.ErrorContains(t, err, "use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", id)
		require.NotContains(t, err.Error(), "_check", id)

		_, err = f.h.CreatePool(f.ctx, operator, commands.CreatePool{ID: id, SiteID: "ber1", Kind: commands.PoolBareMetal})
		require.Equal(t, core.CodeInvalidArgument, core.CodeOf(err), "pool %q: %v", id, err)
		require.ErrorContains(t, err, "use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", id)
		require.NotContains(t, err.Error(), "_check", id)
	}
	require.Equal(t, 1, f.countEvents(t, core.EventSiteCreated), "only the fixture's site")
	require.Equal(t, pools, f.countEvents(t, core.EventPoolCreated), "no pool was created")

	// The longest id, and digits first, are fine.
	_, err := f.h.CreateSite(f.ctx, operator, commands.CreateSite{ID: "1" + strings.Repeat("a-", 31), Name: "Frankfurt"})
	require.NoError(t, err)
	f.requireInvariants(t)
}
