package jobs

import (
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver/fake"
	"github.com/paddock-dev/paddock/appliance/service"
	"github.com/paddock-dev/paddock/appliance/service/coretest"
)

// withCore is the jobs over the real core and store, on a fake engine
// that has the image img.
func withCore(t *testing.T) (*Jobs, *service.Service, *fake.Driver) {
	s, drv := coretest.New(t)
	return New(s, s.Store, drv, &s.Cfg, s.Log, s.Life), s, drv
}
