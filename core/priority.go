package core

import "regexp"

// Priority classes (docs/concepts/priority.md): named by operators, each
// with a value (higher is more important), whether reservations of the class
// may be displaced by a strictly higher value, and the grace a displaced
// workload gets between SIGTERM and the kill.
const (
	// MinPriority and MaxPriority bound a class's value.
	MinPriority = -1_000_000_000
	MaxPriority = 1_000_000_000
	// DefaultGraceSeconds is a class's grace when its creator names none;
	// MaxGraceSeconds the longest grace a class may give (a day).
	DefaultGraceSeconds = 30
	MaxGraceSeconds     = 86_400
	// MaxPriorityClassDescription is the longest description, in bytes.
	MaxPriorityClassDescription = 1024

	// LegacyPriorityClass is the default class migration 0032 created: the
	// class of every reservation made before classes existed, and what an
	// event written before then, which names none, means.
	LegacyPriorityClass = "standard"
)

var priorityClassName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// ValidPriorityClassName reports whether name can name a class: 1 to 63
// lower-case letters, digits or '-', starting and ending with a letter or
// digit (a DNS label).
func ValidPriorityClassName(name string) bool { return priorityClassName.MatchString(name) }

// PriorityClassEventData is the data of priority_class.created: the class
// as an operator created it.
type PriorityClassEventData struct {
	Name         string `json:"name"`
	Value        int32  `json:"value"`
	Preemptible  bool   `json:"preemptible"`
	GraceSeconds int32  `json:"graceSeconds"`
	Description  string `json:"description"`
	IsDefault    bool   `json:"isDefault"`
	Version      int64  `json:"version"`
}

// TenantPriorityClassesEventData is the data of tenant.priority_classes_set:
// the whole new allow-list of a tenant (the classes it may use besides the
// default one, in name order; empty: the default only) and the version of
// that set.
type TenantPriorityClassesEventData struct {
	Tenant  string   `json:"tenant"`
	Classes []string `json:"classes"`
	Version int64    `json:"version"`
}

// PriorityClassSubject names a priority class's events.
func PriorityClassSubject(name string) string { return "priority-classes/" + name }

// TenantPriorityClassesSubject names the events of a tenant's allow-list.
func TenantPriorityClassesSubject(tenant string) string {
	return "tenants/" + tenant + "/priority-classes"
}
