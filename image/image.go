package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// epoch is every timestamp of the image, so that the same inputs give the
// same digest.
var epoch = time.Unix(0, 0).UTC()

// buildFlags are xcaddy's defaults (v0.4.7, which xcaddy.Dockerfile pins):
// no debug symbols, no build machine paths, and the tags that leave out
// database drivers Caddy's dependencies would link.
var buildFlags = []string{"-ldflags", "-w -s", "-trimpath", "-tags", "nobadger,nomysql,nopgx"}

// compile builds Caddy with the module (./cmd/caddy: Caddy's standard
// modules and this one, as the main package xcaddy generates has them),
// static as the Dockerfile builds it, for linux/arch.
func compile(src, arch, out string) error {
	cmd := exec.Command("go", slices.Concat([]string{"build", "-o", out}, buildFlags, []string{"./cmd/caddy"})...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build ./cmd/caddy in %s: %w", src, err)
	}
	// The Dockerfile's check that both handlers are in, where the binary
	// can run here.
	if runtime.GOOS != "linux" || runtime.GOARCH != arch {
		return nil
	}
	listed, err := exec.Command(out, "list-modules").Output()
	if err != nil {
		return fmt.Errorf("caddy list-modules: %w", err)
	}
	for _, module := range []string{"http.handlers.a2a", "http.handlers.a2a_health"} {
		if !slices.Contains(strings.Fields(string(listed)), module) {
			return fmt.Errorf("the binary built from %s has no module %s", src, module)
		}
	}
	return nil
}

// assemble makes the image of a built binary: the base layer with the CA
// bundle read from caCerts, the application layer, the run configuration.
func assemble(binaryFile, caCerts, arch string) (v1.Image, error) {
	bundle, err := os.ReadFile(caCerts)
	if err != nil {
		return nil, fmt.Errorf("CA certificates: %w", err)
	}
	switch n, err := countCertificates(bundle); {
	case err != nil:
		return nil, fmt.Errorf("CA certificates %s: %w", caCerts, err)
	case n == 0:
		return nil, fmt.Errorf("CA certificates %s: no certificate in it: want a PEM bundle", caCerts)
	}
	binary, err := os.ReadFile(binaryFile)
	if err != nil {
		return nil, err
	}
	base, err := baseLayer(bundle)
	if err != nil {
		return nil, err
	}
	app, err := appLayer(binary)
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, config(arch))
	if err != nil {
		return nil, err
	}
	var adds []mutate.Addendum
	for _, l := range []struct {
		fs   *rootfs
		what string
	}{
		{base, "the base: users, CA certificates, /tmp (as distroless static nonroot has them)"},
		{app, "the application: " + binaryPath + ", Caddy's state and the mount points"},
	} {
		layer, err := l.fs.layer()
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: l.what}})
	}
	return mutate.Append(img, adds...)
}

// countCertificates counts the certificates of a PEM bundle; one that does
// not parse is an error.
func countCertificates(bundle []byte) (int, error) {
	n := 0
	for block, rest := pem.Decode(bundle); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return n, fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	return n, nil
}

// write writes the image as an OCI image layout directory (with out's
// previous layout replaced), or as a docker tarball when out ends in .tar.
func write(img v1.Image, out, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return fmt.Errorf("-tag %s: %w", tag, err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if strings.HasSuffix(out, ".tar") {
		return tarball.WriteToFile(out, ref, img)
	}
	if err := removeLayout(out); err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	p, err := layout.Write(out, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendImage(img,
		layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()}),
		layout.WithPlatform(v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture}))
}

// removeLayout removes the OCI layout at dir, so that it holds one image
// and no blobs of earlier builds; a directory that is neither a layout nor
// empty is left alone, and an error.
func removeLayout(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && len(entries) == 0):
		return nil
	case err != nil:
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("%s is not an OCI image layout, nor empty: not writing the image there", dir)
	}
	return os.RemoveAll(dir)
}

// rootfs is a layer's file tree as a tarball: entries in the order added,
// each directory before what it holds (root's, 0755, unless added with
// another owner or mode), every timestamp the epoch.
type rootfs struct {
	buf  bytes.Buffer
	tw   *tar.Writer
	dirs map[string]bool
	err  error
}

func newRootfs() *rootfs {
	r := &rootfs{dirs: map[string]bool{"/": true}}
	r.tw = tar.NewWriter(&r.buf)
	return r
}

func (r *rootfs) dir(name string, mode int64, owner int) {
	r.parents(name)
	r.dirs[name] = true
	r.add(&tar.Header{Typeflag: tar.TypeDir, Name: name[1:] + "/", Mode: mode, Uid: owner, Gid: owner}, nil)
}

func (r *rootfs) file(name string, mode int64, content []byte) {
	r.parents(name)
	r.add(&tar.Header{Typeflag: tar.TypeReg, Name: name[1:], Mode: mode, Size: int64(len(content))}, content)
}

// parents adds the directories above name that are not in yet.
func (r *rootfs) parents(name string) {
	if parent := path.Dir(name); !r.dirs[parent] {
		r.dir(parent, 0o755, 0)
	}
}

func (r *rootfs) add(h *tar.Header, content []byte) {
	if r.err != nil {
		return
	}
	h.ModTime = epoch
	if r.err = r.tw.WriteHeader(h); r.err == nil {
		_, r.err = r.tw.Write(content)
	}
}

func (r *rootfs) close() error {
	if r.err != nil {
		return r.err
	}
	return r.tw.Close()
}

// layer is the tarball as an OCI layer, gzipped once.
func (r *rootfs) layer() (v1.Layer, error) {
	data := r.buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil },
		tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
}
