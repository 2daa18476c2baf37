package core

import "strings"

// MaxSiteName bounds a site's display name, in bytes. Every role reads
// sites (GET /v1/sites), which send every name in each page: a name of a
// page's size would make each list a page per site.
const MaxSiteName = 256

// ValidSiteName says why name cannot be a site's display name, or nil: it
// is 1 to MaxSiteName bytes of printable UTF-8, not all spaces. An
// operator writes it and every tenant reads it, in the console and at a
// terminal, so no control or format character (an escape sequence, a
// bidirectional override) may reach them through it (see Printable).
func ValidSiteName(name string) error {
	if strings.TrimSpace(name) == "" || len(name) > MaxSiteName || !Printable(name) {
		return Errorf(CodeInvalidArgument, "site name %q is not 1 to %d bytes of printable characters, not all spaces",
			Clip(name, 64), MaxSiteName)
	}
	return nil
}
