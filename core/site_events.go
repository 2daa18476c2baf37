package core

// SiteEventData is the data of the site events: the site as written.
// site.created is written when an operator creates a site, site.updated
// when an operator renames one (Name is the new name, Version the site's
// new version).
type SiteEventData struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
}
