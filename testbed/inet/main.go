// Command inet is the testbed's "internet": run inside the pdk-inet network
// namespace (see package harness), it serves on addresses that exist only
// there:
//
//   - HTTP on port 80 of every address: "/" answers "hello from ADDR",
//     "/slow?n=N" sends N KiB, one every 100 ms, "/bytes?n=N" sends N bytes
//     at full speed; on 169.254.169.254 it plays a cloud metadata server;
//   - a Debian package repository of one package at /debian/ on port 80
//     (apt.go), for image builds' apt-get;
//   - DNS on 198.18.0.53:53 (UDP and TCP) for a few test names:
//     allowed.test, *.wild.test, other.test, rebind.test (a private
//     address), metadata.test (169.254.169.254), api.model.test and
//     other-api.test (the fake model API), local-api.test (127.0.0.1),
//     private-api.test and metadata-api.test (the fake model API again, on
//     10.254.254.254 and 169.254.169.254);
//   - a fake model API over HTTPS on 198.18.5.5 and 198.18.5.6 (port
//     443), and on 10.254.254.254 and 169.254.169.254, with a certificate
//     for api.model.test, other-api.test, private-api.test and
//     metadata-api.test from
//     an authority made at start, written to the file -ca names (the
//     credential broker's tests trust it; nothing else does). POST
//     /v1/messages answers a message and notes a SHA-256 of the key it
//     was sent (x-api-key, or Authorization's bearer); GET /_seen lists
//     those digests, never a key; /bytes?n=N as on port 80.
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

var names = map[string]string{
	"allowed.test.":   "198.18.1.1",
	"other.test.":     "198.18.2.2",
	"rebind.test.":    "10.1.2.3",
	"metadata.test.":  "169.254.169.254",
	"api.model.test.": "198.18.5.5",
	"other-api.test.": "198.18.5.6",
	"local-api.test.": "127.0.0.1",
	// The fake model API on a private address and on the metadata one:
	// something listens there, as the broker must never find out.
	"private-api.test.":  "10.254.254.254",
	"metadata-api.test.": "169.254.169.254",
}

func answer(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	q := r.Question[0]
	ip, ok := names[strings.ToLower(q.Name)]
	if !ok && strings.HasSuffix(strings.ToLower(q.Name), ".wild.test.") {
		ip, ok = "198.18.4.4", true
	}
	if !ok {
		m.SetRcode(r, dns.RcodeNameError)
	} else if q.Qtype == dns.TypeA {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 30}, A: net.ParseIP(ip)})
	}
	w.WriteMsg(m)
}

func main() {
	caPath := flag.String("ca", "", "where to write the fake API's authority (PEM)")
	flag.Parse()
	if *caPath != "" {
		if err := serveModelAPI(*caPath); err != nil {
			log.Fatal(err)
		}
	}
	dns.HandleFunc(".", answer)
	for _, proto := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: "198.18.0.53:53", Net: proto}
		go func() { log.Fatal(srv.ListenAndServe()) }()
	}
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		local := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
		host, _, _ := net.SplitHostPort(local.String())
		if host == "169.254.169.254" {
			fmt.Fprintln(w, "metadata: secret-credentials")
			return
		}
		fmt.Fprintf(w, "hello from %s\n", host)
	})
	http.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Length", strconv.Itoa(n*1024))
		chunk := make([]byte, 1024)
		for i := 0; i < n; i++ {
			w.Write(chunk)
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	})
	http.HandleFunc("/bytes", sendBytes)
	aptRepo(http.DefaultServeMux)
	log.Fatal(http.ListenAndServe(":80", nil))
}

func sendBytes(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.ParseInt(r.URL.Query().Get("n"), 10, 64)
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	io.CopyN(w, zeros{}, n)
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
