package fake_test

import (
	"testing"

	"github.com/paddock-dev/paddock/appliance/driver/drivertest"
	"github.com/paddock-dev/paddock/appliance/driver/fake"
)

func TestContract(t *testing.T) {
	drivertest.Lifecycle(t, fake.New("base:1"), "base:1")
}
