package natsink_test

import (
	"os"
	"testing"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
