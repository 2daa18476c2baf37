package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Joiner registers a node with its inventory (if it is new) and returns a
// fresh node credential.
type Joiner interface {
	Join(ctx context.Context, nodeID string, inv Inventory) (token string, err error)
}

// HTTPJoiner joins through the API: POST /v1/nodes/{id}/join with the
// node's single-use join token (POST /v1/nodes/{id}/join-tokens), which can
// join that one node and do nothing else.
type HTTPJoiner struct {
	ServerURL string
	Token     string
	Client    *http.Client
}

// Join implements Joiner.
func (h HTTPJoiner) Join(ctx context.Context, nodeID string, inv Inventory) (string, error) {
	if h.ServerURL == "" || h.Token == "" {
		return "", fmt.Errorf("no credential yet: a server URL and a join token for this node are needed (--join-token-file)")
	}
	body, err := json.Marshal(inv)
	if err != nil {
		return "", fmt.Errorf("encode inventory: %w", err)
	}
	u := strings.TrimRight(h.ServerURL, "/") + "/v1/nodes/" + url.PathEscape(nodeID) + "/join"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("join request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+h.Token)
	req.Header.Set("Content-Type", "application/json")
	client := h.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err // the caller says "join"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var out struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Token == "" {
		return "", fmt.Errorf("response without a token")
	}
	return out.Token, nil
}
