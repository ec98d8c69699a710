package service

import (
	"context"
	"testing"

	"github.com/paddock-dev/paddock/appliance/api"
)

// A box is made only from the configured images: another image the engine
// has (a snapshot image, an ID) gets the same answer as one it lacks.
func TestImagesOnlyFromTheList(t *testing.T) {
	s, _ := newService(t)
	ctx := context.Background()
	for _, im := range []string{"img", "img2"} {
		if _, err := s.CreateBox(ctx, api.BoxPost{Image: im}); err != nil {
			t.Errorf("image %s on the list: %v", im, err)
		}
	}
	absent := ""
	for _, im := range []string{"no-such:1", "owner-snapshot:1", "sha256:0123abcd", "0123ab"} {
		_, err := s.CreateBox(ctx, api.BoxPost{Image: im})
		if err == nil {
			t.Fatalf("box made from image %s, which is not on the list", im)
		}
		e, ok := err.(*api.Error)
		if !ok || e.Field != "image" {
			t.Fatalf("image %s: %#v", im, err)
		}
		msg := e.Code + ": " + e.Message[len(`image "`+im+`"`):]
		if absent == "" {
			absent = msg
		} else if msg != absent {
			t.Errorf("image %s answers %q, an absent image %q", im, msg, absent)
		}
	}
}
