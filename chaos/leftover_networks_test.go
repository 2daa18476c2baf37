package chaos

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"

	"github.com/bettercompute/compute/agent"
)

// removeNetworks releases the bridge-mode networks of the allocations a
// killed daemon left: for each attachment in the daemon's CNI cache (its
// state directory's cni/cache, where the daemon's CNI calls keep them), a
// CNI DEL, which takes the address and the NAT rules, then its network
// namespace. A daemon releases them when it stops an allocation, and a
// restarted one when it adopts and releases what it left, but a test's
// daemon is killed for good: every e2e run with a bridge-mode pool left a
// /run/netns/compute-* namespace, its veth on the compute0 bridge and its
// iptables chains behind (TestWorkloadsInRealIsolation, one a run).
func removeNetworks(t *testing.T, stateDir string) {
	t.Helper()
	ctx := context.Background()
	cni := libcni.NewCNIConfigWithCacheDir(agent.DefaultCNIBinDirs, filepath.Join(stateDir, "cni", "cache"), nil)
	attachments, err := cni.GetCachedAttachments("")
	if err != nil {
		t.Errorf("the killed daemon's CNI cache: %v", err)
		return
	}
	for _, a := range attachments {
		list, err := libcni.ConfListFromBytes(a.Config)
		if err == nil {
			err = cni.DelNetworkList(ctx, list, &libcni.RuntimeConf{ContainerID: a.ContainerID, NetNS: a.NetNS, IfName: a.IfName})
		}
		if err != nil {
			t.Logf("CNI delete of %s's network: %v", a.ContainerID, err) // the namespace goes all the same
		}
		if a.NetNS == "" {
			continue
		}
		if _, err := os.Stat(a.NetNS); err != nil {
			continue // released by the daemon already
		}
		if out, err := exec.Command("ip", "netns", "delete", filepath.Base(a.NetNS)).CombinedOutput(); err != nil {
			t.Errorf("ip netns delete %s: %v: %s", filepath.Base(a.NetNS), err, strings.TrimSpace(string(out)))
		}
	}
}
