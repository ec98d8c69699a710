package main

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/vbatts/tar-split/tar/asm"
	"github.com/vbatts/tar-split/tar/storage"
)

func main() {
	diffs := os.Args[1:]
	chain := ""
	for _, d := range diffs {
		if chain == "" {
			chain = d
		} else {
			h := sha256.Sum256([]byte(chain + " " + d))
			chain = fmt.Sprintf("sha256:%x", h)
		}
		dir := filepath.Join("/var/lib/docker/image/overlay2/layerdb/sha256", strings.TrimPrefix(chain, "sha256:"))
		cid, err := os.ReadFile(filepath.Join(dir, "cache-id"))
		if err != nil {
			panic(err)
		}
		f, _ := os.Open(filepath.Join(dir, "tar-split.json.gz"))
		gz, _ := gzip.NewReader(f)
		rc := asm.NewOutputTarStream(storage.NewPathFileGetter(filepath.Join("/var/lib/docker/overlay2", string(cid), "diff")), storage.NewJSONUnpacker(gz))
		h := sha256.New()
		n, err := io.Copy(h, rc)
		fmt.Printf("%s %d ok=%v %v\n", d[:19], n, fmt.Sprintf("sha256:%x", h.Sum(nil)) == d, err)
	}
}
