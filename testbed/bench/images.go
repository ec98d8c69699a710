package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/paddock-dev/paddock/testbed/harness"
)

// benchImages times users' image builds (paddock image build: a builder
// box, the builder's engine running the Dockerfile, the image taken into
// the server's engine) beside docker build of the same Dockerfile on the
// server's engine, each n times:
//
//   - a first build: every step runs (a new first step each time), the
//     apt step fetching a package from the testbed's mirror;
//   - a rebuild with nothing changed (Paddock: its inputs are the last
//     build's, so it is that image; docker: every step from its cache);
//   - a rebuild with one context file changed (the apt step from the
//     cache, the COPY and what follows run).
//
// The base (the testbed's small box image) is loaded into the builder once,
// before the first timed build: the user's build cache keeps it.
func benchImages(bins harness.Bins, image, work string, n int) []row {
	stop, err := harness.StartInternet()
	fatal(err)
	defer stop()
	root, err := harness.Root()
	fatal(err)
	mini := strings.TrimSpace((&runner{}).run("bash", filepath.Join(root, "testbed", "images.sh"), "mini"))
	d, err := harness.NewDaemon(bins, image, work)
	fatal(err)
	d.Images = []string{mini}
	d.Env = []string{"PADDOCK_UNSAFE_DOCKER_IN_RUNC_BOXES=true"}
	fatal(d.Start())
	defer d.Cleanup()
	r := &runner{env: append(d.CLIEnv(), "PADDOCK_CONFIG_DIR="+filepath.Join(work, "cli-images")), bins: bins}
	dir := filepath.Join(work, "imgctx")
	fatal(os.MkdirAll(dir, 0o755))
	write := func(first string) {
		df := fmt.Sprintf(`FROM %s
RUN echo %s
RUN rm -f /etc/apt/sources.list /etc/apt/sources.list.d/* && \
    echo 'deb [trusted=yes] http://198.18.6.6/debian ./' > /etc/apt/sources.list.d/test.list && \
    apt-get -o Acquire::http::Timeout=5 update && apt-get install -y paddock-hello
COPY note.txt /opt/note.txt
`, mini, first)
		fatal(os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644))
	}
	note := func(s string) { fatal(os.WriteFile(filepath.Join(dir, "note.txt"), []byte(s+"\n"), 0o644)) }
	raw := "pdkbench-build-" + d.Instance
	defer r.run("sh", "-c", "docker images -q --filter reference='"+raw+"*' | xargs -r docker rmi -f")
	rawBuild := func(i int) { r.docker("build", "-q", "-t", fmt.Sprintf("%s:%d", raw, i), dir) }
	build := func(tag string) { r.paddock("image", "build", "-q", "-t", "bench:"+tag, dir) }

	// Untimed: the base into the builder's cache; the host's cache warm.
	write("warm")
	note("warm")
	build("warm")
	rawBuild(0)

	run := 0
	first := timeIt(n, func(int) { run++; write(fmt.Sprintf("first-%d-%d", time.Now().UnixNano(), run)) }, func(i int) { build(fmt.Sprint("first", i)) }, nil)
	rawFirst := timeIt(n, func(int) { run++; write(fmt.Sprintf("first-%d-%d", time.Now().UnixNano(), run)) }, func(i int) { rawBuild(100 + i) }, nil)
	write("steady")
	note("steady")
	build("same")
	rawBuild(200)
	same := timeIt(n, nil, func(int) { build("same") }, nil)
	rawSame := timeIt(n, nil, func(i int) { rawBuild(200) }, nil)
	changed := timeIt(n, func(i int) { note(fmt.Sprintf("p%d-%d", i, time.Now().UnixNano())) }, func(int) { build("same") }, nil)
	rawChanged := timeIt(n, func(i int) { note(fmt.Sprintf("r%d-%d", i, time.Now().UnixNano())) }, func(int) { rawBuild(200) }, nil)
	return []row{
		{"image build, every step (apt from the mirror, a COPY)", first, rawFirst},
		{"image build, nothing changed", same, rawSame},
		{"image build, one context file changed", changed, rawChanged},
	}
}
