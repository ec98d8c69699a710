package service

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// BoxPorts lists the TCP ports something listens on in a running box
// (read from its /proc/net/tcp and tcp6: any image has them), lowest
// first. A port that listens only on the box's loopback is noted: a
// preview reaches a box of this server at the box's address, so it does
// not reach that port (a box on another server is reached from inside,
// through an exec, and so it does).
func (s *Service) BoxPorts(ctx context.Context, name string) ([]api.Port, error) {
	b, err := s.RunningBox(name)
	if err != nil {
		return nil, err
	}
	out, errs, code, err := s.Output(ctx, name, []string{"cat", "/proc/net/tcp", "/proc/net/tcp6"})
	if err != nil {
		return nil, err
	}
	if code != 0 && out == "" {
		return nil, fmt.Errorf("reading the ports of box %s: exit %d: %s", name, code, strings.TrimSpace(errs))
	}
	ports := []api.Port{}
	for _, p := range ListeningPorts(out) {
		// Not the user's: the engine's resolver for the box, and the
		// desktop's VNC server (reached by the desktop page).
		if p.Address == dockerDNS || (p.Address == "127.0.0.1" && strconv.Itoa(p.Port) == driver.VNCPort) {
			continue
		}
		if a, err := netip.ParseAddr(p.Address); err == nil && a.IsLoopback() && b.Node == "" {
			p.Note = "listens on the box's loopback only, where previews do not reach: make it listen on 0.0.0.0"
		}
		ports = append(ports, p)
	}
	return ports, nil
}

// dockerDNS is where Docker's embedded resolver listens in a container on
// a user-made network.
const dockerDNS = "127.0.0.11"

// ListeningPorts reads the listening sockets of /proc/net/tcp and tcp6
// text: one entry per port, the widest address it listens on.
func ListeningPorts(procNet string) []api.Port {
	best := map[int]api.Port{}
	rank := func(addr string) int {
		a, err := netip.ParseAddr(addr)
		switch {
		case err != nil:
			return 0
		case a.IsUnspecified():
			return 3
		case !a.IsLoopback():
			return 2
		}
		return 1
	}
	for _, line := range strings.Split(procNet, "\n") {
		f := strings.Fields(line)
		// sl local_address rem_address st ...; 0A is LISTEN.
		if len(f) < 4 || f[3] != "0A" {
			continue
		}
		host, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		p, err := strconv.ParseUint(port, 16, 16)
		if err != nil || p == 0 {
			continue
		}
		addr, ok := procAddr(host)
		if !ok {
			continue
		}
		if old, ok := best[int(p)]; !ok || rank(addr) > rank(old.Address) {
			best[int(p)] = api.Port{Port: int(p), Address: addr}
		}
	}
	out := make([]api.Port, 0, len(best))
	for _, p := range best {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Port < out[j].Port })
	return out
}

// procAddr decodes an address of /proc/net/tcp (8 hex digits, the IPv4
// address in host order, little-endian here) or tcp6 (32 hex digits, four
// such words).
func procAddr(h string) (string, bool) {
	raw, err := hex.DecodeString(h)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return "", false
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, ok := netip.AddrFromSlice(raw)
	if !ok {
		return "", false
	}
	return a.Unmap().String(), true
}
