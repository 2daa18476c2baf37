package core

import "regexp"

// labelIDPattern is the sites and pools tables' CHECK on ids (tenants' too):
// a DNS-like label of 1 to 63 lower-case letters, digits and '-', starting
// with a letter or digit. Node ids also allow '.' (nodeIDPattern).
var labelIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidSiteID says why id cannot be a site's id, or nil. sites.create checks
// it before writing, as node and tenant ids are checked, so that the caller
// hears the rule in words rather than the name of the constraint that the
// database enforces it with ("it breaks the rule sites_id_check").
func ValidSiteID(id string) error {
	return validLabelID("site", id)
}

// ValidPoolID is ValidSiteID for a pool's id (pools.create).
func ValidPoolID(id string) error {
	return validLabelID("pool", id)
}

func validLabelID(kind, id string) error {
	if !labelIDPattern.MatchString(id) {
		return Errorf(CodeInvalidArgument,
			"%s id %q is invalid: use 1 to 63 lower-case letters, digits or '-', starting with a letter or digit", kind, Clip(id, 64))
	}
	return nil
}
