//go:build !linux

package agent

import (
	"errors"
	"syscall"
)

func isCgroup2(string) error { return errors.New("cgroups are a Linux feature") }

func probeCgroup(string) error { return errors.New("cgroups are a Linux feature") }

func setCgroupFD(*syscall.SysProcAttr, int) {}
