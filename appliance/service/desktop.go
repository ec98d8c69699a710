package service

import (
	"github.com/paddock-dev/paddock/appliance/api"
	"github.com/paddock-dev/paddock/appliance/driver"
	"github.com/paddock-dev/paddock/appliance/store"
)

// Display is where a box's desktop is.
const Display = driver.Display

// DesktopBox returns a box that is running and has a desktop, or a
// clear error.
func (s *Service) DesktopBox(name string) (store.Box, error) {
	b, err := s.RunningBox(name)
	if err != nil {
		return b, err
	}
	if !b.Desktop {
		return b, api.Conflict("box %q has no desktop: make one with 'paddock new --desktop' (or desktop = true in a Boxfile)", name)
	}
	return b, nil
}
