package main

import (
	"encoding/json"
	"regexp"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// Stopping `compute serve --demo` stops its daemons gracefully while its
// gateway still serves them: a workload still running is stopped and
// reported so, and after a restart the instance reads `stopped`, "the node
// daemon stopped". Before, the gateway went with the signal, the daemons'
// reports found no session, and the restarted server judged the instance
// lost (`failed`).
func TestDemoStopReportsTheWorkloadsItStopped(t *testing.T) {
	t.Parallel()
	dir := scratchDir(t)
	bin := buildCompute(t, dir)
	addr := freeAddr(t)
	env := baseEnv(dir, "COMPUTE_ADDR="+addr, "COMPUTE_GATEWAY_ADDR="+freeAddr(t))
	start := func() *proc {
		serve := startProc(t, dir, env, bin, "serve", "--demo")
		serve.waitFor(t, "the demo's tokens and /healthz", startTimeout, func() bool {
			return demoPrinted.MatchString(serve.out()) && healthy("http://"+addr)
		})
		return serve
	}
	serve := start()
	tenant := demoPrinted.FindStringSubmatch(serve.out())[2]
	asTenant := baseEnv(dir, "COMPUTE_SERVER=http://"+addr, "COMPUTE_TOKEN="+tenant)
	cli := func(args ...string) map[string]any {
		out, errOut, code := runCLI(t, dir, asTenant, "", append([]string{bin}, append(args, "-o", "json")...)...)
		require.Equal(t, 0, code, errOut)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		return v
	}
	rsv := cli("reservations", "create", "--pool", "demo-pool", "--gpus", "1", "--start", "now", "--duration", "1h")["id"].(string)
	serve.waitFor(t, "the reservation active", startTimeout, func() bool {
		return cli("reservations", "get", rsv)["state"] == "active"
	})
	ins := cli("instances", "create", "--reservation", rsv, "--command", "sleep 600")["id"].(string)
	serve.waitFor(t, "the instance running", startTimeout, func() bool {
		return cli("instances", "get", ins)["state"] == "running"
	})

	serve.stop(t, syscall.SIGTERM)
	require.True(t, serve.cmd.ProcessState.Success(), "compute serve exit: %v", serve.cmd.ProcessState)
	require.NotRegexp(t, regexp.MustCompile(`no session to report on`), serve.out())

	serve = start()
	got := cli("instances", "get", ins)
	require.Equal(t, "stopped", got["state"], "%v", got)
	require.Equal(t, "the node daemon stopped", got["reason"], "%v", got)
	_, errOut, code := runCLI(t, dir, asTenant, "", bin, "reservations", "release", rsv)
	require.Equal(t, 0, code, errOut)
	serve.stop(t, syscall.SIGTERM)
}
