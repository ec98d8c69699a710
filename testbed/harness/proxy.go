package harness

import (
	"io"
	"net"
	"net/http"
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
