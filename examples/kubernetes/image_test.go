package kubernetes

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"crypto/x509"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// The sidecar these tests run is the image that image/ builds without a
// container runtime (xcaddy.Dockerfile's, made by the Go toolchain): built
// once per test run, its layers unpacked here as a runtime unpacks them,
// and its binary run from them with the image's command and env.

// buildDir holds the image the tests built and its layers unpacked;
// TestMain removes it.
var buildDir string

func TestMain(m *testing.M) {
	var err error
	if buildDir, err = os.MkdirTemp("", "k8stest-image-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(buildDir)
	os.Exit(code)
}

// imageLayout builds the image as the README says (go run in image/), as
// an OCI image layout, once per test run.
var imageLayout = sync.OnceValues(func() (string, error) {
	if dir := os.Getenv(envImage); dir != "" {
		return dir, nil // built by the parent of a pod test
	}
	out := filepath.Join(buildDir, "layout")
	cmd := exec.Command("go", "run", ".", "-o", out)
	cmd.Dir = "../../image"
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the image (go run ./image): %v\n%s", err, msg)
	}
	return out, nil
})

var unpacked = sync.OnceValues(func() (*image, error) {
	layout, err := imageLayout()
	if err != nil {
		return nil, err
	}
	return unpack(layout, filepath.Join(buildDir, "rootfs"))
})

func unpackedImage(t *testing.T) *image {
	t.Helper()
	img, err := unpacked()
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// image is an image unpacked from an OCI layout.
type image struct {
	config  imageConfig
	root    string                 // its layers, unpacked
	entries map[string]*tar.Header // its layers' entries by path ("/usr/bin/caddy"), the last one's
}

// imageConfig is the part of an OCI image config that a runtime reads.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// descriptor points at a blob of the layout.
type descriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// unpack reads an OCI image layout of one image as a runtime does (the
// index, the manifest, the config, then the layers in order, every blob
// checked against its digest and size, every layer against its diff id)
// and writes its files under root. Only files and directories are taken:
// an image built from nothing has no links, devices or whiteouts.
func unpack(layout, root string) (*image, error) {
	var index struct {
		Manifests []descriptor `json:"manifests"`
	}
	if err := readJSON(filepath.Join(layout, "index.json"), &index); err != nil {
		return nil, err
	}
	if len(index.Manifests) != 1 || index.Manifests[0].MediaType != "application/vnd.oci.image.manifest.v1+json" {
		return nil, fmt.Errorf("%s: want one OCI image manifest, have %+v", layout, index.Manifests)
	}
	var manifest struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := blobJSON(layout, index.Manifests[0], &manifest); err != nil {
		return nil, err
	}
	img := &image{root: root, entries: map[string]*tar.Header{}}
	if manifest.Config.MediaType != "application/vnd.oci.image.config.v1+json" {
		return nil, fmt.Errorf("config media type %s", manifest.Config.MediaType)
	}
	if err := blobJSON(layout, manifest.Config, &img.config); err != nil {
		return nil, err
	}
	if img.config.RootFS.Type != "layers" || len(img.config.RootFS.DiffIDs) != len(manifest.Layers) {
		return nil, fmt.Errorf("rootfs %+v for %d layers", img.config.RootFS, len(manifest.Layers))
	}
	for i, layer := range manifest.Layers {
		if layer.MediaType != "application/vnd.oci.image.layer.v1.tar+gzip" {
			return nil, fmt.Errorf("layer %d: media type %s", i, layer.MediaType)
		}
		if err := img.extract(layout, layer, img.config.RootFS.DiffIDs[i]); err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return img, nil
}

func (img *image) extract(layout string, layer descriptor, diffID string) error {
	data, err := blob(layout, layer)
	if err != nil {
		return err
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	uncompressed := sha256.New()
	tr := tar.NewReader(io.TeeReader(gz, uncompressed))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		name := strings.TrimSuffix(h.Name, "/")
		if !filepath.IsLocal(name) || strings.HasPrefix(path.Base(name), ".wh.") {
			return fmt.Errorf("entry %q: not a plain path in the image", h.Name)
		}
		dst := filepath.Join(img.root, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(dst, 0o755)
		case tar.TypeReg:
			err = writeFrom(dst, tr, h.FileInfo().Mode().Perm())
		default:
			err = fmt.Errorf("entry %s: type %q, not a file or a directory", h.Name, h.Typeflag)
		}
		if err != nil {
			return err
		}
		img.entries["/"+name] = h
	}
	if _, err := io.Copy(uncompressed, gz); err != nil { // what follows the tar's end, for the diff id
		return err
	}
	if got := "sha256:" + hex.EncodeToString(uncompressed.Sum(nil)); got != diffID {
		return fmt.Errorf("diff id %s, the config says %s", got, diffID)
	}
	return nil
}

func writeFrom(dst string, r io.Reader, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// blob reads a blob of the layout, checked against its descriptor.
func blob(layout string, d descriptor) ([]byte, error) {
	algorithm, hash, _ := strings.Cut(d.Digest, ":")
	if algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: not a sha256 digest", d.Digest)
	}
	data, err := os.ReadFile(filepath.Join(layout, "blobs", algorithm, hash))
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != hash || int64(len(data)) != d.Size {
		return nil, fmt.Errorf("blob %s: %d bytes of digest sha256:%x, want %d bytes", d.Digest, len(data), sum, d.Size)
	}
	return data, nil
}

func blobJSON(layout string, d descriptor, into any) error {
	data, err := blob(layout, d)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

func readJSON(file string, into any) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, into)
}

// path is where a path of the image is unpacked.
func (img *image) path(inImage string) string { return filepath.Join(img.root, inImage) }

// user resolves the config's user[:group] through the image's /etc/passwd
// and /etc/group, as a runtime does: its uid, gid and home.
func (img *image) user(t *testing.T) (uid, gid int, home string) {
	t.Helper()
	name, groupName, _ := strings.Cut(img.config.Config.User, ":")
	passwd := img.table(t, "/etc/passwd")[name]
	if len(passwd) < 6 {
		t.Fatalf("user %s: not in the image's /etc/passwd", name)
	}
	uid, _ = strconv.Atoi(passwd[2])
	gid, _ = strconv.Atoi(passwd[3])
	if groupName != "" {
		group := img.table(t, "/etc/group")[groupName]
		if len(group) < 3 {
			t.Fatalf("group %s: not in the image's /etc/group", groupName)
		}
		gid, _ = strconv.Atoi(group[2])
	}
	return uid, gid, passwd[5]
}

// table reads a colon-separated file of the image by its first field.
func (img *image) table(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := os.Open(img.path(file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		fields := strings.Split(sc.Text(), ":")
		rows[fields[0]] = fields
	}
	return rows
}

// copyTree copies the files and directories under src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(from string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, from)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		f, err := os.Open(from)
		if err != nil {
			return err
		}
		defer f.Close()
		return writeFrom(to, f, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// distrolessEnv is the environment xcaddy.Dockerfile's base image sets,
// which the Dockerfile's ENV adds to.
var distrolessEnv = map[string]string{
	"PATH":          "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
}

// TestImage checks the image built here against xcaddy.Dockerfile,
// instruction by instruction, and what a runtime would run from it: the
// user its files resolve to, a static binary that needs no shell, the CA
// certificates, Caddy's state directories. TestManifests and TestPod run
// that binary.
func TestImage(t *testing.T) {
	m := loadManifests(t)
	c := container(t, &m.deployment, sidecarName)
	df := readDockerfile(t)
	img := unpackedImage(t)
	cfg := img.config.Config

	t.Run("the config is the Dockerfile's", func(t *testing.T) {
		if df.base != "gcr.io/distroless/static-debian12:nonroot" {
			t.Errorf("the Dockerfile's base is %s; image/ makes what distroless static nonroot gives, and this test knows its env", df.base)
		}
		if img.config.OS != "linux" {
			t.Errorf("os %s", img.config.OS)
		}
		env := maps.Clone(distrolessEnv)
		maps.Copy(env, df.env)
		got := map[string]string{}
		for _, kv := range cfg.Env {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		if !maps.Equal(got, env) {
			t.Errorf("env %v; the base's and the Dockerfile's: %v", got, env)
		}
		var expose []string
		for port := range cfg.ExposedPorts {
			expose = append(expose, strings.TrimSuffix(port, "/tcp"))
		}
		slices.Sort(expose)
		for _, check := range []struct {
			instr     string
			got, want any
		}{
			{"USER", cfg.User, df.user},
			{"WORKDIR", cfg.WorkingDir, df.workdir},
			{"EXPOSE", expose, slices.Sorted(slices.Values(df.expose))},
			{"ENTRYPOINT", cfg.Entrypoint, df.entrypoint},
			{"CMD", cfg.Cmd, df.cmd},
		} {
			if fmt.Sprint(check.got) != fmt.Sprint(check.want) {
				t.Errorf("%s: the image has %v, the Dockerfile %v", check.instr, check.got, check.want)
			}
		}
		if !maps.Equal(cfg.Labels, df.labels) {
			t.Errorf("LABEL: the image has %v, the Dockerfile %v", cfg.Labels, df.labels)
		}
		// What the Dockerfile copies: the binary, Caddy's state for nonroot.
		if !slices.Equal(df.copies, []string{cfg.Entrypoint[0], "/var/lib/caddy"}) {
			t.Errorf("the Dockerfile copies to %v; image/ puts the binary at %s and the state at /var/lib/caddy", df.copies, cfg.Entrypoint[0])
		}
	})

	t.Run("the user is nonroot, 65532, as the pod runs it", func(t *testing.T) {
		uid, gid, home := img.user(t)
		sc := m.deployment.Spec.Template.Spec.SecurityContext
		if uid != 65532 || gid != 65532 || int64(uid) != *sc.RunAsUser || int64(gid) != *sc.RunAsGroup {
			t.Errorf("the image's user %s is %d:%d; the pod runs as %d:%d; want 65532", cfg.User, uid, gid, *sc.RunAsUser, *sc.RunAsGroup)
		}
		if h := img.entries[home]; h == nil || h.Uid != uid {
			t.Errorf("the user's home %s is not the user's", home)
		}
		// Caddy's state directories are the user's when no volume is mounted.
		for _, name := range []string{"XDG_DATA_HOME", "XDG_CONFIG_HOME"} {
			if h := img.entries[df.env[name]]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != uid || h.Gid != gid {
				t.Errorf("%s %s: not a directory of %d:%d in the image", name, df.env[name], uid, gid)
			}
		}
	})

	t.Run("a static binary, and no shell", func(t *testing.T) {
		entrypoint := cfg.Entrypoint[0]
		if h := img.entries[entrypoint]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o755 || h.Uid != 0 {
			t.Fatalf("the entrypoint %s: %+v; want a file of root's, mode 0755", entrypoint, h)
		}
		f, err := elf.Open(img.path(entrypoint))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[img.config.Architecture]
		if f.Machine != machine {
			t.Errorf("the binary is for %s, the image for %s", f.Machine, img.config.Architecture)
		}
		libs, _ := f.ImportedLibraries()
		if len(libs) != 0 || slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
			t.Errorf("the binary is dynamically linked (%v): the image has no C library", libs)
		}
		// The entrypoint is the only program: the exec form of ENTRYPOINT
		// and CMD (readDockerfile) needs no shell, and there is none.
		for name, h := range img.entries {
			if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 && name != entrypoint {
				t.Errorf("%s is executable: the image holds one program, %s", name, entrypoint)
			}
		}
	})

	t.Run("the CA certificates", func(t *testing.T) {
		bundle, err := os.ReadFile(img.path(distrolessEnv["SSL_CERT_FILE"]))
		if err != nil {
			t.Fatal(err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(bundle) {
			t.Error("the image's CA bundle has no certificate")
		}
	})

	t.Run("the mount points and ports are the pod's", func(t *testing.T) {
		for _, vm := range c.VolumeMounts {
			if h := img.entries[vm.MountPath]; h == nil || h.Typeflag != tar.TypeDir {
				t.Errorf("the image has no directory %s, where the pod mounts %s", vm.MountPath, vm.Name)
			}
		}
		for _, cp := range c.Ports {
			if _, ok := cfg.ExposedPorts[fmt.Sprintf("%d/tcp", cp.ContainerPort)]; !ok {
				t.Errorf("the image does not expose the container's port %d", cp.ContainerPort)
			}
		}
	})
}
