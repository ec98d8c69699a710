package service

import (
	"context"
	"fmt"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
)

// A watch whose client does not read keeps watchQueue events and counts
// the rest as dropped: the box's program is never held up, and nothing
// is lost without being said.
func TestFileWatchDropsAndCounts(t *testing.T) {
	svc, drv := newService(t)
	if _, err := svc.CreateBox(context.Background(), api.BoxPost{Name: "wb"}); err != nil {
		t.Fatal(err)
	}
	const flood = 10000
	written := make(chan struct{})
	drv.ExecFunc = func(box string, spec driver.ExecSpec) (int, error) {
		fmt.Fprintln(spec.Stdout, `{"type":"ready","path":"/w","watches":1}`)
		for i := 0; i < flood; i++ {
			fmt.Fprintf(spec.Stdout, `{"type":"created","path":"/w/f%d"}`+"\n", i)
		}
		close(written)
		// The watch runs until its input ends.
		buf := make([]byte, 1)
		spec.Stdin.Read(buf)
		return 0, nil
	}
	w, err := svc.WatchDir(context.Background(), "wb", "/w", false)
	if err != nil {
		t.Fatal(err)
	}
	// Nothing was read while the flood came; now all of it.
	<-written
	dropped := w.Dropped()
	w.Close()
	got := 0
	for e := range w.C {
		if e.Type == "created" {
			got++
		}
	}
	// The queue held the ready event and watchQueue-1 others.
	if int64(got)+dropped != flood || got != watchQueue-1 {
		t.Fatalf("%d delivered and %d dropped of %d", got, dropped, flood)
	}
	if w.Err() != nil {
		t.Fatalf("a closed watch's error: %v", w.Err())
	}
}
