package procstat

import (
	"os"
	"testing"
	"time"
)

func TestSelf(t *testing.T) {
	pid := os.Getpid()
	before, err := CPU(pid)
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the kernel has counted some CPU time (a shared machine
	// may give this test little of it), for at most ten seconds.
	deadline := time.Now().Add(10 * time.Second)
	for {
		after, err := CPU(pid)
		if err != nil {
			t.Fatal(err)
		}
		if after-before >= 50*time.Millisecond {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("CPU went from %v to %v over ten seconds of spinning", before, after)
		}
		for start := time.Now(); time.Since(start) < 10*time.Millisecond; { // burn CPU
		}
	}
	if err := ResetPeak(pid); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMemory(pid)
	if err != nil {
		t.Fatal(err)
	}
	if m.RSS <= 0 || m.Peak < m.RSS/2 {
		t.Errorf("memory %+v: want a positive RSS and a peak near or above it", m)
	}
}

func TestMissingProcess(t *testing.T) {
	if _, err := CPU(-1); err == nil {
		t.Error("CPU of pid -1: no error")
	}
	if _, err := ReadMemory(-1); err == nil {
		t.Error("ReadMemory of pid -1: no error")
	}
}
