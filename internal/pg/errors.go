package pg

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/bettercompute/compute/core"
)

// SQLSTATE codes this package classifies.
const (
	sqlstateUniqueViolation      = "23505"
	sqlstateExclusionViolation   = "23P01"
	sqlstateCheckViolation       = "23514"
	sqlstateForeignKeyViolation  = "23503"
	sqlstateSerializationFailure = "40001"
	sqlstateDeadlockDetected     = "40P01"
	sqlstateInvalidTextRep       = "22P02"
	sqlstateNumericOutOfRange    = "22003"
	sqlstateNullByteInText       = "22021"
	sqlstateQueryCanceled        = "57014"
	sqlstateLockNotAvailable     = "55P03"
	// sqlstateTenantSuspended is raised by the suspension guard
	// (tenant_refuse_suspended, migration 0065), its detail the reason.
	sqlstateTenantSuspended = "BC001"
)

// maxSubjectBytes caps the subject of a translated error.
const maxSubjectBytes = 200

// Translate is the one place where database errors become typed core errors:
// no rows is NOT_FOUND, a unique or exclusion violation is CONFLICT, a check
// violation is INVALID_ARGUMENT, a lost race is UNAVAILABLE (retryable).
// Errors that already carry a code pass through unchanged.
func Translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var ce *core.Error
	if errors.As(err, &ce) {
		return err
	}
	// The subject quotes what the caller sent ("node <id>"), which may be
	// far longer than any valid id; the rest of the message says what was
	// wrong with it.
	what = core.Clip(what, maxSubjectBytes)
	if errors.Is(err, pgx.ErrNoRows) {
		return core.Wrap(core.CodeNotFound, err, what+" not found")
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return core.Wrap(core.CodeUnavailable, err, "request cancelled or timed out")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case sqlstateUniqueViolation, sqlstateExclusionViolation:
			return core.Wrap(core.CodeConflict, err, what+" conflicts with an existing one")
		case sqlstateForeignKeyViolation:
			// The detail names the missing key, which the caller sent.
			return core.Wrap(core.CodeNotFound, err, what+": "+missingKey(pgErr.Detail))
		case sqlstateCheckViolation:
			// The constraint's name says which rule the input broke
			// (nodes_id_check: the id's characters or length).
			if pgErr.ConstraintName != "" {
				return core.Wrap(core.CodeInvalidArgument, err, what+" is invalid: it breaks the rule "+pgErr.ConstraintName)
			}
			return core.Wrap(core.CodeInvalidArgument, err, what+" is invalid")
		case sqlstateInvalidTextRep:
			return core.Wrap(core.CodeInvalidArgument, err, what+" is invalid")
		case sqlstateNumericOutOfRange:
			return core.Wrap(core.CodeInvalidArgument, err, what+" has a number out of range")
		case sqlstateNullByteInText:
			// character_not_in_repertoire: a NUL, or bytes that are not
			// UTF-8 (a percent-encoded path or query can carry either).
			return core.Wrap(core.CodeInvalidArgument, err, what+" contains a NUL character or bytes that are not UTF-8")
		case sqlstateSerializationFailure, sqlstateDeadlockDetected:
			return core.Wrap(core.CodeUnavailable, err, "concurrent update, retry")
		case sqlstateTenantSuspended:
			// The message names the tenant and the reason.
			return core.Wrap(core.CodeTenantSuspended, err, pgErr.Message)
		case sqlstateQueryCanceled:
			// Cancelled on a deadline or a client that went away
			// (pgx cancels on context end), or by statement_timeout.
			return core.Wrap(core.CodeUnavailable, err, "request cancelled or timed out")
		}
		return err
	}
	if pgconn.SafeToRetry(err) || isConnError(err) {
		return core.Wrap(core.CodeUnavailable, err, "database unavailable")
	}
	return err
}

// IsRetryable reports whether a transaction failed only because it lost a
// race (serialization failure or deadlock) and may simply be run again.
func IsRetryable(err error) bool {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code == sqlstateSerializationFailure || pgErr.Code == sqlstateDeadlockDetected
	}
	return false
}

func isConnError(err error) bool {
	var connErr *pgconn.ConnectError
	return errors.As(err, &connErr)
}

// IsUniqueViolation reports a 23505.
func IsUniqueViolation(err error) bool {
	return hasSQLState(err, sqlstateUniqueViolation)
}

// IsExclusionViolation reports a 23P01.
func IsExclusionViolation(err error) bool {
	return hasSQLState(err, sqlstateExclusionViolation)
}

// IsCheckViolation reports a 23514 of the named CHECK constraint: a
// command that knows which of its inputs the rule is about says so in
// the caller's words.
func IsCheckViolation(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == sqlstateCheckViolation && pgErr.ConstraintName == constraint
}

// IsDeadlock reports a 40P01: PostgreSQL aborted the statement to break a
// deadlock. IsRetryable covers it too; this is for counting deadlocks apart.
func IsDeadlock(err error) bool {
	return hasSQLState(err, sqlstateDeadlockDetected)
}

// IsLockNotAvailable reports a 55P03: a lock was not granted within
// lock_timeout (or NOWAIT found it taken).
func IsLockNotAvailable(err error) bool {
	return hasSQLState(err, sqlstateLockNotAvailable)
}

// IsQueryCanceled reports a 57014: PostgreSQL cancelled the statement, on
// statement_timeout or on the cancel request pgx sends when the context
// ends.
func IsQueryCanceled(err error) bool {
	return hasSQLState(err, sqlstateQueryCanceled)
}

// IsCanceledOrTimedOut reports a failure because the caller went away or a
// deadline passed, whether it surfaced from the context, from pgconn or
// from PostgreSQL (57014): not a bug, and retrying may succeed. Translate
// makes these UNAVAILABLE; this is for an error that arrives untranslated.
func IsCanceledOrTimedOut(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		pgconn.Timeout(err) || IsQueryCanceled(err)
}

func hasSQLState(err error, code string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == code
}

// missingKeyDetail is PostgreSQL's detail of a foreign-key violation.
var missingKeyDetail = regexp.MustCompile(`^Key \((.+)\)=\((.*)\) is not present in table "(.+)"\.$`)

// missingKey says what of a foreign-key violation is missing in the API's
// words: `siteId "nosite" does not exist` for PostgreSQL's `Key
// (site_id)=(nosite) is not present in table "sites".`, the column named
// as the request's field (siteId), not as the table's column (site_id),
// which no caller ever wrote; another detail as it is.
func missingKey(detail string) string {
	m := missingKeyDetail.FindStringSubmatch(detail)
	if m == nil {
		return detail
	}
	return fmt.Sprintf("%s %q does not exist", fieldName(m[1]), m[2])
}

// fieldName is a column list of a key as the API's JSON names its fields:
// site_id is siteId, "tenant_id, name" is "tenantId, name".
func fieldName(columns string) string {
	parts := strings.Split(columns, ", ")
	for i, col := range parts {
		words := strings.Split(col, "_")
		for j := 1; j < len(words); j++ {
			if words[j] != "" {
				words[j] = strings.ToUpper(words[j][:1]) + words[j][1:]
			}
		}
		parts[i] = strings.Join(words, "")
	}
	return strings.Join(parts, ", ")
}
