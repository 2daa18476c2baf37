package core

// SiteEventData is the data of site.created, written when an operator
// creates a site: the site as written.
type SiteEventData struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Version int64  `json:"version"`
}
