package service

import (
	"github.com/paddock-dev/paddock/appliance/driver"
)

// Display is where a box's desktop is.
const Display = driver.Display

// DesktopBox checks that a box is running and has a desktop.
func (s *Service) DesktopBox(name string) error {
	b, err := s.RunningBox(name)
	if err != nil {
		return err
	}
	if !b.Desktop {
		return conflict("box %q has no desktop: make one with 'paddock new --desktop' (or desktop = true in a Boxfile)", name)
	}
	return nil
}
