package main

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bettercompute/compute/internal/pg/pgtest"
)

// compute serve on a port that is taken says which setting moves it:
// "listen tcp …: bind: address already in use" alone did not (README.md,
// Quick start, names COMPUTE_ADDR and COMPUTE_GATEWAY_ADDR).
func TestServeOnATakenPortNamesTheSetting(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	for setting, env := range map[string][]string{
		"COMPUTE_ADDR":         {"COMPUTE_ADDR=" + taken.Addr().String(), "COMPUTE_GATEWAY_ADDR=" + freeAddr(t)},
		"COMPUTE_GATEWAY_ADDR": {"COMPUTE_ADDR=" + freeAddr(t), "COMPUTE_GATEWAY_ADDR=" + taken.Addr().String()},
	} {
		_, errOut, code := runCLI(t, dir, baseEnv(dir, append(env, "DATABASE_URL="+d.URL, "COMPUTE_LOG_LEVEL=warn")...), "", bin, "serve")
		require.Equal(t, 1, code, errOut)
		require.Contains(t, errOut, "address already in use", setting)
		require.Contains(t, errOut, "("+setting+")", errOut)
	}
}

// The ports are bound first: a demo on a taken port stops before it seeds
// its fleet, prints tokens or starts daemons. It used to do all three and
// only then fail to listen, its tokens naming a server that never served.
func TestServeDemoOnATakenPortDoesNothingFirst(t *testing.T) {
	t.Parallel()
	d := pgtest.New(t)
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = taken.Close() })
	env := baseEnv(dir, "COMPUTE_ADDR="+taken.Addr().String(), "COMPUTE_GATEWAY_ADDR="+freeAddr(t),
		"DATABASE_URL="+d.URL, "COMPUTE_LOG_LEVEL=warn")
	out, errOut, code := runCLI(t, dir, env, "", bin, "serve", "--demo")
	require.Equal(t, 1, code, errOut)
	require.Contains(t, errOut, "(COMPUTE_ADDR)", errOut)
	require.NotContains(t, out, "bc_", "no token printed")
	var nodes int
	require.NoError(t, d.Pool.QueryRow(t.Context(), "SELECT count(*) FROM nodes").Scan(&nodes))
	require.Zero(t, nodes, "no demo fleet seeded")
}
