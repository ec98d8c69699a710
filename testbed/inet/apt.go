package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"time"
)

// aptRepo is a Debian package repository of one package, paddock-hello
// (it installs /usr/bin/paddock-hello, which prints "hello from the test
// mirror"), served flat at /debian/ on port 80 of every address: what a
// build's "apt-get install" reaches in the tests instead of Debian's
// mirror. Its sources.list line is
//
//	deb [trusted=yes] http://ADDR/debian ./
func aptRepo(mux *http.ServeMux) {
	deb := makeDeb()
	const file = "paddock-hello_1.0_all.deb"
	sum := sha256.Sum256(deb)
	packages := fmt.Sprintf("%sFilename: ./%s\nSize: %d\nSHA256: %s\n\n", control, file, len(deb), hex.EncodeToString(sum[:]))
	psum := sha256.Sum256([]byte(packages))
	release := fmt.Sprintf("Origin: paddock-test\nLabel: paddock-test\nSuite: test\nCodename: test\nDate: %s\nArchitectures: all amd64 arm64\nSHA256:\n %s %d Packages\n",
		time.Now().UTC().Format(time.RFC1123), hex.EncodeToString(psum[:]), len(packages))
	files := map[string][]byte{"/debian/" + file: deb, "/debian/Packages": []byte(packages), "/debian/Release": []byte(release)}
	mux.HandleFunc("/debian/", func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if len(p) > 9 && p[:10] == "/debian/./" {
			p = "/debian/" + p[10:]
		}
		b, ok := files[p]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})
}

const control = "Package: paddock-hello\nVersion: 1.0\nArchitecture: all\nMaintainer: Paddock tests <tests@paddock.invalid>\nDescription: a package from the test mirror\n"

// makeDeb builds the package: an ar archive of debian-binary,
// control.tar.gz and data.tar.gz.
func makeDeb() []byte {
	script := "#!/bin/sh\necho hello from the test mirror\n"
	ctl := targz(map[string]string{"./control": control})
	data := targz(map[string]string{"./usr/bin/paddock-hello": script})
	var b bytes.Buffer
	b.WriteString("!<arch>\n")
	for _, m := range []struct {
		name string
		body []byte
	}{{"debian-binary", []byte("2.0\n")}, {"control.tar.gz", ctl}, {"data.tar.gz", data}} {
		fmt.Fprintf(&b, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", m.name, 0, 0, 0, "100644", len(m.body))
		b.Write(m.body)
		if len(m.body)%2 == 1 {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

func targz(files map[string]string) []byte {
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for name := range files {
		for d := dirOf(name); d != "." && !dirs[d]; d = dirOf(d) {
			dirs[d] = true
		}
	}
	for _, d := range sortedDirs(dirs) {
		tw.WriteHeader(&tar.Header{Name: d + "/", Typeflag: tar.TypeDir, Mode: 0o755})
	}
	for name, body := range files {
		tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	return b.Bytes()
}

func dirOf(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}

// sortedDirs is parents before children.
func sortedDirs(m map[string]bool) []string {
	var out []string
	for d := range m {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) < len(out[j]) })
	return out
}
