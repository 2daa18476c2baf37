package core

import "time"

// MaxSuspensionReasonBytes bounds the reason an operator gives for a
// suspension: it is shown in every refusal the tenant gets.
const MaxSuspensionReasonBytes = 500

// TenantSuspensionEventData is the data of tenant.suspended and
// tenant.resumed: the tenant, why it was suspended (empty in
// tenant.resumed), when (nil in tenant.resumed), the version of its
// suspension (bumped by every suspend and resume) and, in tenant.suspended,
// whether the operator asked to release its reservations.
type TenantSuspensionEventData struct {
	Tenant              string     `json:"tenant"`
	Reason              string     `json:"reason,omitempty"`
	SuspendedAt         *time.Time `json:"suspendedAt,omitempty"`
	ReleaseReservations bool       `json:"releaseReservations"`
	Version             int64      `json:"version"`
}

// TenantSubject names the events of a tenant itself (its suspension).
func TenantSubject(tenant string) string { return "tenants/" + tenant }

// TenantSuspendedError is the refusal of a suspended tenant's request.
func TenantSuspendedError(tenant, reason string) *Error {
	return Errorf(CodeTenantSuspended, "tenant %s is suspended: %s", tenant, reason)
}
