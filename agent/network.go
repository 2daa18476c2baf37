package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/bettercompute/compute/wire"
)

// An allocation's network, by its pool's mode (wire.Network*):
//
//   - none (the default): the container's own network namespace, only
//     loopback. Nothing is reachable, the node's loopback included.
//   - bridge: a network namespace the daemon makes (`ip netns add`) and
//     wires through the CNI plugins, as containerd does for a pod: the
//     bridge plugin gives it an address on the node's bridge and a default
//     route out, masqueraded. Then, inside the namespace, where the
//     workload (no CAP_NET_ADMIN) cannot undo them, "prohibit" routes
//     refuse every connection to the node's own addresses, the bridge's
//     subnet (other allocations), link-local and cloud metadata addresses
//     and the control plane's addresses.
//   - host: the node's network namespace: for pools with one tenant only,
//     whose workloads may reach whatever the node reaches.

// DefaultCNIBinDirs are where CNI plugins are looked for: Debian's
// containernetworking-plugins, then the upstream default.
var DefaultCNIBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// DefaultBridgeSubnet is the address range of bridge-mode allocations.
const DefaultBridgeSubnet = "10.87.0.0/16"

// bridgeName is the node's bridge for bridge-mode allocations.
const bridgeName = "compute0"

// alwaysDenied are refused to every bridge-mode workload: IPv4 link-local
// (the clouds' metadata services live there, 169.254.169.254), AWS's IPv6
// metadata range (fd00:ec2::254) and Azure's wire server.
var alwaysDenied = []string{"169.254.0.0/16", "fd00:ec2::/32", "168.63.129.16/32"}

// network sets up and tears down allocations' network namespaces.
type network struct {
	cni      *libcni.CNIConfig
	conf     *libcni.NetworkConfigList
	subnet   netip.Prefix
	netnsDir string
	// controlPlane are the addresses of the API and gateways this daemon
	// talks to: refused to workloads.
	controlPlane []netip.Prefix
	log          *slog.Logger
}

// newNetwork prepares bridge networking: the CNI plugins' directories,
// its configuration, and the control plane's addresses to refuse.
func newNetwork(cfg Config, state string) (*network, error) {
	subnet, err := netip.ParsePrefix(cfg.BridgeSubnet)
	if cfg.BridgeSubnet == "" {
		subnet, err = netip.MustParsePrefix(DefaultBridgeSubnet), nil
	}
	if err != nil {
		return nil, fmt.Errorf("bridge subnet: %w", err)
	}
	dirs := cfg.CNIBinDirs
	if len(dirs) == 0 {
		dirs = DefaultCNIBinDirs
	}
	conf, err := json.Marshal(map[string]any{"cniVersion": "1.0.0", "name": "compute", "plugins": []any{
		map[string]any{"type": "bridge", "bridge": bridgeName, "isGateway": true, "ipMasq": true,
			"ipam": map[string]any{"type": "host-local", "ranges": [][]map[string]string{{{"subnet": subnet.String()}}},
				"routes": []map[string]string{{"dst": "0.0.0.0/0"}}, "dataDir": filepath.Join(state, "cni", "ipam")}},
	}})
	if err != nil {
		return nil, err
	}
	list, err := libcni.ConfListFromBytes(conf)
	if err != nil {
		return nil, err
	}
	n := &network{cni: libcni.NewCNIConfigWithCacheDir(dirs, filepath.Join(state, "cni", "cache"), nil), conf: list,
		subnet: subnet, netnsDir: "/var/run/netns", log: cfg.Logger}
	for _, raw := range append([]string{cfg.ServerURL}, cfg.GatewayURLs...) {
		n.controlPlane = append(n.controlPlane, hostPrefixes(raw)...)
	}
	return n, nil
}

// hostPrefixes are the addresses the host of a URL resolves to, each as a
// single-address prefix.
func hostPrefixes(raw string) []netip.Prefix {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	addrs, err := net.LookupHost(u.Hostname())
	if err != nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range addrs {
		if ip, err := netip.ParseAddr(a); err == nil {
			out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
		}
	}
	return out
}

// netnsName is the bridge-mode namespace of an allocation: short, and
// unique per node and allocation.
func netnsName(node, allocation string) string {
	sum := sha256.Sum256([]byte(node + "/" + allocation))
	return "compute-" + hex.EncodeToString(sum[:8])
}

// configure sets the container's network in spec by mode: none keeps the
// new, empty namespace podSpec asks for; host drops it; bridge makes and
// wires a namespace and points the container at it.
func (n *network) configure(ctx context.Context, spec *specs.Spec, node, allocation, mode string) error {
	switch mode {
	case "", wire.NetworkNone:
		return nil
	case wire.NetworkHost:
		setNetNS(spec, "", false)
		return nil
	case wire.NetworkBridge:
	default:
		return fmt.Errorf("unknown network mode %q", mode)
	}
	if n == nil {
		return fmt.Errorf("bridge networking is not available on this node")
	}
	name := netnsName(node, allocation)
	path := filepath.Join(n.netnsDir, name)
	_ = n.teardown(ctx, node, allocation) // a namespace left by a crash goes first
	for _, args := range [][]string{{"netns", "add", name}, {"netns", "exec", name, "ip", "link", "set", "lo", "up"}} {
		if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
			_ = n.teardown(context.WithoutCancel(ctx), node, allocation)
			return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
	}
	if _, err := n.cni.AddNetworkList(ctx, n.conf, &libcni.RuntimeConf{ContainerID: allocation, NetNS: path,
		IfName: "eth0"}); err != nil {
		_ = n.teardown(context.WithoutCancel(ctx), node, allocation)
		return fmt.Errorf("CNI add: %w", err)
	}
	// The node's addresses now include its end of the bridge.
	deny, err := n.denied()
	if err == nil {
		err = refuse(ctx, name, deny)
	}
	if err != nil {
		_ = n.teardown(context.WithoutCancel(ctx), node, allocation)
		return err
	}
	setNetNS(spec, path, true)
	return nil
}

// denied is what a bridge-mode workload may not reach: the node's own
// addresses, the bridge's subnet (its gateway is the node; the rest are
// other allocations), alwaysDenied, and the control plane.
func (n *network) denied() ([]netip.Prefix, error) {
	out := []netip.Prefix{n.subnet}
	for _, s := range alwaysDenied {
		out = append(out, netip.MustParsePrefix(s))
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && !ip.Unmap().IsLoopback() {
				out = append(out, netip.PrefixFrom(ip.Unmap(), ip.Unmap().BitLen()))
			}
		}
	}
	out = append(out, n.controlPlane...)
	// Once each, and never loopback: the namespace's loopback is its own
	// (the node's is out of reach anyway), and its routes are the
	// kernel's.
	seen := map[netip.Prefix]bool{}
	uniq := out[:0]
	for _, p := range out {
		if !seen[p] && !p.Addr().IsLoopback() {
			seen[p] = true
			uniq = append(uniq, p)
		}
	}
	return uniq, nil
}

// refuse adds, in the namespace, a "prohibit" route for each of deny:
// a connection there fails at once (EACCES), and the workload, without
// CAP_NET_ADMIN, cannot remove the routes. A prefix that covers the
// namespace's own connected subnet is split in halves, which are more
// specific than the connected route; the gateway stays reachable as the
// next hop of the default route (the kernel does not look the next hop
// up again), but not as a destination.
func refuse(ctx context.Context, netns string, deny []netip.Prefix) error {
	for _, p := range deny {
		halves := []netip.Prefix{p}
		if p.Bits() < p.Addr().BitLen() {
			lo := netip.PrefixFrom(p.Masked().Addr(), p.Bits()+1)
			hi := netip.PrefixFrom(lastOf(lo).Next(), p.Bits()+1)
			halves = []netip.Prefix{lo, hi}
		}
		for _, h := range halves {
			args := []string{"netns", "exec", netns, "ip", "-4", "route", "add", "prohibit", h.String()}
			if h.Addr().Is6() {
				args[4] = "-6"
			}
			if out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
			}
		}
	}
	return nil
}

// lastOf is the last address of a prefix.
func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// teardown removes an allocation's bridge-mode namespace and what the CNI
// plugins made for it (its address, its end of the bridge). Nothing there
// is no error.
func (n *network) teardown(ctx context.Context, node, allocation string) error {
	if n == nil {
		return nil
	}
	name := netnsName(node, allocation)
	path := filepath.Join(n.netnsDir, name)
	if _, err := os.Stat(path); err != nil {
		return nil
	}
	// The bridge plugin releases the address first and its NAT rules last;
	// a DEL cut short (a daemon killed in the middle) fails on the rules
	// it already removed when it is repeated. What is left then is the
	// namespace, which goes either way: the DEL's failure is logged, not
	// a reason to keep the allocation.
	if err := n.cni.DelNetworkList(ctx, n.conf, &libcni.RuntimeConf{ContainerID: allocation, NetNS: path,
		IfName: "eth0"}); err != nil && n.log != nil {
		n.log.Warn("CNI delete of an allocation's network", "allocation", allocation, "err", err)
	}
	if out, err := exec.CommandContext(ctx, "ip", "netns", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns delete %s: %w: %s", name, err, bytes.TrimSpace(out))
	}
	return nil
}

// setNetNS makes the container's network namespace path (new when "") or,
// with keep false, removes it: the host's network.
func setNetNS(spec *specs.Spec, path string, keep bool) {
	var ns []specs.LinuxNamespace
	for _, n := range spec.Linux.Namespaces {
		if n.Type != specs.NetworkNamespace {
			ns = append(ns, n)
		}
	}
	if keep {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: path})
	}
	spec.Linux.Namespaces = ns
}
