package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// client speaks the public HTTP API with one bearer token. Every call has
// its own timeout, so a request to a process that was just killed fails
// quickly instead of hanging the load.
type client struct {
	token string
	http  *http.Client
}

func newClient(token string) *client {
	return &client{token: token, http: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true},
	}}
}

// do sends body as JSON and decodes a 2xx answer into out (if not nil).
// A non-2xx answer is an errStatus; a transport failure is returned as is.
func (c *client) do(ctx context.Context, method, url, idemKey string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		_ = json.Unmarshal(raw, &e)
		return errStatus{status: resp.StatusCode, code: e.Error.Code, body: string(raw)}
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// createToken issues a token through the CLI, the way an operator
// bootstraps an installation (there is no token to call the API with yet).
func createToken(t *testing.T, dbURL, tenant, identity, role string, extraEnv ...string) string {
	t.Helper()
	cmd := exec.Command(computeBinary(t), "tokens", "create", "--database", "--tenant", tenant, "--identity", identity, "--role", role)
	cmd.Env = append(append(os.Environ(), "DATABASE_URL="+dbURL, "COMPUTE_LOG_LEVEL=warn"), extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("compute tokens create: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "token:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no token in:\n%s", out)
	return ""
}

// fleet describes what seed builds: one site, one bare-metal pool, nodes of
// exclusive H100s, and the tenant's GPU quota.
type fleet struct {
	nodes, gpusPerNode int
	gpuQuota           int64
}

const (
	tenant   = "acme"
	poolID   = "chaos-pool"
	gpuModel = "H100-80GB"
)

// seed builds the fleet over HTTP as the operator and returns the tenant's
// client. Quotas other than GPUs are set far above what the load uses.
func seed(t *testing.T, ctx context.Context, base, dbURL string, f fleet, extraEnv ...string) (op, member *client) {
	t.Helper()
	op = newClient(createToken(t, dbURL, "ops", "chaos-operator", "operator", extraEnv...))
	member = newClient(createToken(t, dbURL, tenant, "chaos-load", "member", extraEnv...))
	must := func(method, path string, body any) {
		t.Helper()
		if err := op.do(ctx, method, base+path, "", body, nil); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	must("POST", "/v1/sites", map[string]any{"id": "chaos-site", "name": "Chaos site"})
	must("POST", "/v1/pools", map[string]any{"id": poolID, "siteId": "chaos-site", "kind": "bare-metal"})
	for n := range f.nodes {
		gpus := make([]map[string]any, f.gpusPerNode)
		for g := range gpus {
			gpus[g] = map[string]any{"uuid": fmt.Sprintf("GPU-c%d-%d", n, g), "model": gpuModel, "memoryMb": 81920,
				"layout": map[string]any{"mode": "exclusive"}}
		}
		must("POST", "/v1/nodes", map[string]any{"id": fmt.Sprintf("chaos-node-%d", n), "poolId": poolID,
			"vcpu": 4096, "memoryMb": 1 << 24, "diskGb": 1 << 20, "gpus": gpus})
	}
	for res, max := range map[string]int64{"gpu": f.gpuQuota, "vcpu": 1 << 20, "memory": 1 << 30, "disk": 1 << 30} {
		must("PUT", "/v1/tenants/"+tenant+"/quotas/"+res, map[string]any{"max": max})
	}
	return op, member
}

// registerWebhook points a webhook endpoint of the tenant (every event
// type) at the receiver and hands the receiver its secret.
func registerWebhook(t *testing.T, ctx context.Context, base string, member *client, rcv *receiver) {
	t.Helper()
	var ep struct {
		ID     string `json:"id"`
		Secret string `json:"secret"`
	}
	if err := member.do(ctx, "POST", base+"/v1/webhook-endpoints", "", map[string]any{"url": rcv.URL()}, &ep); err != nil {
		t.Fatalf("create webhook endpoint: %v", err)
	}
	rcv.setSecret(ep.Secret)
}
