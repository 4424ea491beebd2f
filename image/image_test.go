package main

import (
	"archive/tar"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// These tests assemble images of a stand-in binary: building Caddy, and
// running what the image holds, is examples/kubernetes's part (its
// image_test.go), which builds the image with this command once per run.

// inputs writes a stand-in binary and a CA bundle of one certificate.
func inputs(t *testing.T) (binary, caCerts string) {
	t.Helper()
	dir := t.TempDir()
	binary, caCerts = filepath.Join(dir, "caddy"), filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(binary, []byte("\x7fELF a stand-in"), 0o755); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(caCerts, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return binary, caCerts
}

func assembled(t *testing.T) v1.Image {
	t.Helper()
	binary, caCerts := inputs(t)
	img, err := assemble(binary, caCerts, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// TestLayers lists every entry of the image's layers, with its owner and
// mode: the tree a runtime unpacks.
func TestLayers(t *testing.T) {
	binary, caCerts := inputs(t)
	img, err := assemble(binary, caCerts, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{
		"etc/ dir 755 0:0",
		"etc/passwd file 644 0:0",
		"etc/group file 644 0:0",
		"etc/ssl/ dir 755 0:0",
		"etc/ssl/certs/ dir 755 0:0",
		"etc/ssl/certs/ca-certificates.crt file 644 0:0",
		"tmp/ dir 1777 0:0",
		"home/ dir 755 0:0",
		"home/nonroot/ dir 700 65532:65532",
	}, {
		"usr/ dir 755 0:0",
		"usr/bin/ dir 755 0:0",
		"usr/bin/caddy file 755 0:0",
		"var/ dir 755 0:0",
		"var/lib/ dir 755 0:0",
		"var/lib/caddy/ dir 755 65532:65532",
		"var/lib/caddy/data/ dir 755 65532:65532",
		"var/lib/caddy/config/ dir 755 65532:65532",
		"etc/ dir 755 0:0",
		"etc/caddy-a2a/ dir 755 0:0",
		"etc/caddy-a2a/config/ dir 755 0:0",
		"etc/caddy-a2a/secrets/ dir 755 0:0",
	}}
	if len(layers) != len(want) {
		t.Fatalf("%d layers, want %d", len(layers), len(want))
	}
	files := map[string][]byte{}
	for i, layer := range layers {
		if mt, err := layer.MediaType(); err != nil || mt != types.OCILayer {
			t.Errorf("layer %d: media type %s, %v", i, mt, err)
		}
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			kind := map[byte]string{tar.TypeDir: "dir", tar.TypeReg: "file"}[h.Typeflag]
			got = append(got, fmt.Sprintf("%s %s %o %d:%d", h.Name, kind, h.Mode, h.Uid, h.Gid))
			if h.ModTime.Unix() != 0 {
				t.Errorf("%s: modified %s, want the epoch", h.Name, h.ModTime)
			}
			if files[h.Name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
		rc.Close()
		if !slices.Equal(got, want[i]) {
			t.Errorf("layer %d:\n%q\nwant\n%q", i, got, want[i])
		}
	}
	for file, content := range map[string]string{binary: "usr/bin/caddy", caCerts: "etc/ssl/certs/ca-certificates.crt"} {
		if source, _ := os.ReadFile(file); !bytes.Equal(files[content], source) {
			t.Errorf("%s is not %s", content, file)
		}
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != "arm64" || cfg.OS != "linux" || cfg.Created.Unix() != 0 || cfg.RootFS.Type != "layers" ||
		len(cfg.RootFS.DiffIDs) != 2 || len(cfg.History) != 2 {
		t.Errorf("config: %s/%s created %s, rootfs %+v, %d history entries", cfg.OS, cfg.Architecture, cfg.Created, cfg.RootFS, len(cfg.History))
	}
}

// TestReproducible: the same inputs give the same digest.
func TestReproducible(t *testing.T) {
	binary, caCerts := inputs(t)
	var digests []v1.Hash
	for range 2 {
		img, err := assemble(binary, caCerts, "amd64")
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, d)
	}
	if digests[0] != digests[1] {
		t.Errorf("two digests of one input: %s, %s", digests[0], digests[1])
	}
}

func TestCACertificatesRefused(t *testing.T) {
	binary, _ := inputs(t)
	for name, content := range map[string]string{
		"empty":         "",
		"not PEM":       "hello",
		"a broken cert": "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"only a key":    "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	} {
		bundle := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(bundle, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := assemble(binary, bundle, "amd64"); err == nil {
			t.Errorf("%s: a CA bundle without certificates was taken", name)
		}
	}
	if _, err := assemble(binary, filepath.Join(t.TempDir(), "missing.pem"), "amd64"); err == nil {
		t.Error("a missing CA bundle was taken")
	}
}

// TestWrite reads what write wrote as crane, skopeo and docker load would:
// a layout of one image, found by its reference name, written again in
// place; or a docker tarball with its tag.
func TestWrite(t *testing.T) {
	img := assembled(t)
	digest, _ := img.Digest()
	configName, _ := img.ConfigName()

	t.Run("OCI layout", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "new", "layout")
		for range 2 { // the second write replaces the first
			if err := write(img, out, "caddy-a2a:latest"); err != nil {
				t.Fatal(err)
			}
		}
		index, err := layout.ImageIndexFromPath(out)
		if err != nil {
			t.Fatal(err)
		}
		m, err := index.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Manifests) != 1 {
			t.Fatalf("%d images in the layout, want 1", len(m.Manifests))
		}
		d := m.Manifests[0]
		if d.Digest != digest || d.Annotations["org.opencontainers.image.ref.name"] != "latest" ||
			d.Platform == nil || d.Platform.OS != "linux" || d.Platform.Architecture != "amd64" {
			t.Errorf("the layout's image: %+v; want %s, named latest, for linux/amd64", d, digest)
		}
		blobs, _ := os.ReadDir(filepath.Join(out, "blobs", "sha256"))
		if len(blobs) != 4 { // manifest, config, two layers
			t.Errorf("%d blobs, want 4", len(blobs))
		}
		read, err := index.Image(digest)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := read.ConfigName(); got != configName {
			t.Errorf("config %s read back, want %s", got, configName)
		}
	})

	t.Run("not over another directory", func(t *testing.T) {
		dir := t.TempDir()
		keep := filepath.Join(dir, "keep")
		if err := os.WriteFile(keep, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := write(img, dir, "caddy-a2a:latest"); err == nil {
			t.Error("written over a directory that is not a layout")
		}
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("the directory's file: %v", err)
		}
	})

	t.Run("docker tarball", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "new", "caddy-a2a.tar") // its directory made too
		if err := write(img, out, "registry.example.com/caddy-a2a:1.0.0"); err != nil {
			t.Fatal(err)
		}
		tag, _ := name.NewTag("registry.example.com/caddy-a2a:1.0.0")
		read, err := tarball.ImageFromPath(out, &tag)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := read.ConfigName(); got != configName {
			t.Errorf("config %s read back, want %s", got, configName)
		}
	})
}

func TestSourceRoot(t *testing.T) {
	wd, _ := os.Getwd()
	if root, err := sourceRoot(wd); err != nil || root != filepath.Dir(wd) {
		t.Errorf("from %s: %q, %v; want its parent", wd, root, err)
	}
	if root, err := sourceRoot(t.TempDir()); err == nil {
		t.Errorf("outside the tree: %q", root)
	}
}
