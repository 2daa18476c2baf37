package commands_test

import (
	"time"

	"github.com/bettercompute/compute/internal/db"
	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func dbQuota(tenant, resource string) db.QuotaUsageGetParams {
	return db.QuotaUsageGetParams{TenantID: tenant, Resource: resource}
}

func dbWork(kind, key string) db.WorkQueueGetParams {
	return db.WorkQueueGetParams{Kind: kind, Key: key}
}

func pgtest30s() time.Time { return pgtest.SimEpoch.Add(30 * time.Second) }
