package harness

import (
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/paddock-dev/paddock/testbed/contract"
)

// ConnectProxy starts an HTTP CONNECT proxy on loopback that sends every
// tunnel to the address ip, keeping the port asked for. With HTTPS_PROXY
// pointing at it, the real CLI reaches https://NAME of a test server
// without any change to this machine's name resolution. It returns the
// proxy's URL and a function that stops it.
func ConnectProxy(ip string) (string, func(), error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	go http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		_, port, _ := net.SplitHostPort(r.Host)
		up, err := net.Dial("tcp", net.JoinHostPort(ip, port))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
		c, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			up.Close()
			return
		}
		go func() { io.Copy(up, buf); up.Close() }()
		io.Copy(c, up)
		c.Close()
	}))
	return "http://" + l.Addr().String(), func() { l.Close() }, nil
}

// ContractProxy starts, on loopback, a reverse proxy to the daemon that
// checks every exchange against the daemon's own OpenAPI document. It
// returns the proxy's URL, the checker, and a function that stops it.
func ContractProxy(d *Daemon) (string, *contract.Checker, func(), error) {
	req, _ := http.NewRequest("GET", "http://"+d.Listen+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+d.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", nil, nil, err
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return "", nil, nil, fmt.Errorf("the OpenAPI document: %d %v %.200s", resp.StatusCode, err, doc)
	}
	c, err := contract.New(doc)
	if err != nil {
		return "", nil, nil, err
	}
	h, err := c.Proxy("http://" + d.Listen)
	if err != nil {
		return "", nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, nil, err
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	return "http://" + l.Addr().String(), c, func() { srv.Close() }, nil
}
