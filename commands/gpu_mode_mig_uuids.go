package commands

import (
	"github.com/bettercompute/compute/core"
	"github.com/bettercompute/compute/internal/db"
)

// migUUIDsOfLayout pairs the atoms of a GPU's new layout with the MIG
// instances its node reported for the old one (rows: the GPU and its
// atoms, as DeviceListGPUForUpdate reads them), by profile in order, as
// recordMIGUUIDs pairs them with an inventory: the k-th new atom of a
// profile (by id) gets the k-th instance of that profile recorded on a
// live atom (by id, which is the instances' order). A mode change reuses
// atom ids (mig-0, mig-1…), so keeping what an id was paired with would
// make a 3g.40gb atom visible as a 1g.10gb instance until the node's next
// inventory, and, once that pairs them again, two atoms (two tenants) as
// one instance. An atom of a profile the old layout lacked gets none: it
// is visible as itself until the node reports an instance for it.
func migUUIDsOfLayout(rows []db.DeviceListGPUForUpdateRow, atoms []core.Atom) map[string]*string {
	recorded := map[string][]string{}
	for _, d := range rows {
		if d.Kind == string(core.AtomMIG) && !d.Retired && d.Profile != nil && d.MigUuid != nil {
			recorded[*d.Profile] = append(recorded[*d.Profile], *d.MigUuid)
		}
	}
	out := make(map[string]*string, len(atoms))
	for _, a := range atoms { // in id order, as rows are
		if a.Kind != core.AtomMIG {
			continue
		}
		if list := recorded[a.Profile]; len(list) > 0 {
			out[a.ID] = &list[0]
			recorded[a.Profile] = list[1:]
		}
	}
	return out
}
