package core

// Role is what an API token may do. Operators act on the whole fleet;
// members act within their tenant; viewers only read within their tenant.
type Role string

// The roles a token can carry.
const (
	RoleOperator Role = "operator"
	RoleMember   Role = "member"
	RoleViewer   Role = "viewer"
)

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool {
	switch r {
	case RoleOperator, RoleMember, RoleViewer:
		return true
	}
	return false
}

// Actor is the authenticated caller of a command or query: who they are,
// for which tenant, and with which role. Idempotency keys are scoped to
// (Tenant, Identity).
type Actor struct {
	TokenID  string
	Tenant   string
	Identity string
	Role     Role
}

// IsOperator reports whether the actor may act on the whole fleet.
func (a Actor) IsOperator() bool { return a.Role == RoleOperator }

// CanWrite reports whether the actor may issue tenant commands.
func (a Actor) CanWrite() bool { return a.Role == RoleOperator || a.Role == RoleMember }

// Sees reports whether the actor may see an object owned by tenant.
// Operators see every tenant's objects; others only their own.
func (a Actor) Sees(tenant string) bool { return a.IsOperator() || a.Tenant == tenant }
