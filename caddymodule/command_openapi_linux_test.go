package caddymodule

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A file the command could not write whole is removed: the docs say
// nothing is written, and the next run would refuse a file that exists.
// The write fails at a file size limit (RLIMIT_FSIZE; Go ignores the
// SIGXFSZ it raises, so the write returns EFBIG).
func TestOpenAPIWriteNewRemovesAPartialFile(t *testing.T) {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "skills.yaml")
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 4, Max: limit.Max}); err != nil {
		t.Fatal(err)
	}
	err := writeNew(path, []byte("skills: []\n"))
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	if err == nil {
		t.Fatal("the write past the file size limit succeeded")
	}
	if _, statErr := os.Stat(path); !os.IsNotExist(statErr) {
		t.Errorf("after %v, the partial file is left (stat: %v)", err, statErr)
	}
}
