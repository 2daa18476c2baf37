package pg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/core"
)

func TestTranslate(t *testing.T) {
	pg := func(code string) error {
		return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code, Detail: "Key (site_id)=(nope) is not present"})
	}
	cases := []struct {
		err  error
		want core.Code
	}{
		{pgx.ErrNoRows, core.CodeNotFound},
		{pg("23505"), core.CodeConflict},
		{pg("23P01"), core.CodeConflict},
		{pg("23503"), core.CodeNotFound},
		{pg("23514"), core.CodeInvalidArgument},
		{pg("22P02"), core.CodeInvalidArgument},
		{pg("22003"), core.CodeInvalidArgument},
		{pg("22021"), core.CodeInvalidArgument},
		{pg("40001"), core.CodeUnavailable},
		{pg("40P01"), core.CodeUnavailable},
		{context.DeadlineExceeded, core.CodeUnavailable},
		{core.Errorf(core.CodeQuotaExceeded, "x"), core.CodeQuotaExceeded},
		{errors.New("something unexpected"), core.CodeInternal},
	}
	for _, c := range cases {
		require.Equal(t, c.want, core.CodeOf(Translate(c.err, "thing")), "%v", c.err)
	}
	require.Contains(t, Translate(pg("23503"), "pool p2").Error(), "(site_id)=(nope)", "a detail of another form as it is")
	fk := &pgconn.PgError{Code: "23503", Detail: `Key (site_id)=(no"site) is not present in table "sites".`}
	// Named as the request's field, siteId, not as the column.
	require.Equal(t, `pool p2: siteId "no\"site" does not exist`, Translate(fk, "pool p2").(*core.Error).Message)
	fk2 := &pgconn.PgError{Code: "23503", Detail: `Key (tenant_id, priority_class)=(acme, gold) is not present in table "tenant_priority_classes".`}
	require.Equal(t, `tenant acme: tenantId, priorityClass "acme, gold" does not exist`, Translate(fk2, "tenant acme").(*core.Error).Message)
	require.NoError(t, Translate(nil, "thing"))
}

// A CHECK violation names the rule broken; a subject quoting a huge input
// is cut, so the message stays short and still says what was wrong.
func TestTranslateCheckViolation(t *testing.T) {
	check := &pgconn.PgError{Code: "23514", ConstraintName: "nodes_id_check"}
	require.Equal(t, "node n1 is invalid: it breaks the rule nodes_id_check",
		Translate(check, "node n1").(*core.Error).Message)

	long := "node " + strings.Repeat("é", 3000)
	msg := Translate(check, long).(*core.Error).Message
	require.Less(t, len(msg), 300)
	require.True(t, utf8.ValidString(msg), "cut at a character boundary")
	require.True(t, strings.HasSuffix(msg, "… is invalid: it breaks the rule nodes_id_check"), msg)
}

func TestSQLStatePredicates(t *testing.T) {
	pg := func(code string) error { return fmt.Errorf("wrapped: %w", &pgconn.PgError{Code: code}) }
	require.True(t, IsDeadlock(pg("40P01")))
	require.False(t, IsDeadlock(pg("40001")))
	require.True(t, IsLockNotAvailable(pg("55P03")))
	require.False(t, IsLockNotAvailable(pg("57014")))
	require.True(t, IsQueryCanceled(pg("57014")))
	require.False(t, IsQueryCanceled(pg("55P03")))
	require.True(t, IsExclusionViolation(pg("23P01")))
	require.False(t, IsExclusionViolation(pg("23505")))
	for _, err := range []error{pg("57014"), context.Canceled, fmt.Errorf("x: %w", context.DeadlineExceeded)} {
		require.True(t, IsCanceledOrTimedOut(err), "%v", err)
	}
	for _, err := range []error{pg("40001"), pg("55P03"), errors.New("other"), nil} {
		require.False(t, IsCanceledOrTimedOut(err), "%v", err)
	}
}
