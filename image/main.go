// Command image builds the caddy-a2a container image without a container
// runtime: the image xcaddy.Dockerfile describes, made from this source tree
// by the Go toolchain alone, with no base image to download. From the
// repository root:
//
//	go -C image run .                        # an OCI image layout in .bin/caddy-a2a-image
//	go -C image run . -o .bin/caddy-a2a.tar  # a docker tarball instead (docker load -i)
//
// The image is Caddy with this module (./cmd/caddy, built static as the
// Dockerfile's xcaddy build is) on an empty base, with what the Dockerfile's
// base (gcr.io/distroless/static-debian12:nonroot) gives it that the agent
// uses: /etc/passwd and /etc/group with the nonroot user (uid and gid
// 65532), the CA certificates, /tmp; and the Dockerfile's own directories,
// user, environment, ports, entrypoint and command (config.go). The same
// source, Go version and CA bundle give the same digest: every timestamp is
// the Unix epoch.
//
// To run it where a runtime exists: skopeo copy
// oci:.bin/caddy-a2a-image:latest docker-daemon:caddy-a2a:latest, or crane
// push .bin/caddy-a2a-image registry.example.com/caddy-a2a:1.0.0 (crane is
// go-containerregistry's command line).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// productModule is the module the image is built from.
const productModule = "github.com/caddy-a2a/caddy-a2a"

func main() {
	var opts options
	flag.StringVar(&opts.src, "src", "", "the caddy-a2a source tree (default: the one the working directory is in)")
	flag.StringVar(&opts.out, "o", ".bin/caddy-a2a-image", "where to write the image, relative to the source tree: an OCI image layout directory, or a docker tarball if the name ends in .tar")
	flag.StringVar(&opts.arch, "arch", runtime.GOARCH, "the image's CPU architecture (GOARCH); the OS is linux")
	flag.StringVar(&opts.caCerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the PEM bundle of CA certificates to put in the image (the build machine's, as Debian's ca-certificates package makes it)")
	flag.StringVar(&opts.tag, "tag", "caddy-a2a:latest", "the image's name: the docker tarball's tag, the OCI layout's reference name (its tag part)")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "image: unexpected arguments %q\n", flag.Args())
		flag.Usage()
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

type options struct {
	src, out, arch, caCerts, tag string
}

func run(opts options) error {
	if opts.src == "" {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		if opts.src, err = sourceRoot(wd); err != nil {
			return err
		}
	}
	// Relative to the source tree, wherever go run runs this (go -C image).
	if !filepath.IsAbs(opts.out) {
		opts.out = filepath.Join(opts.src, opts.out)
	}

	work, err := os.MkdirTemp("", "caddy-a2a-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	binary := filepath.Join(work, "caddy")
	if err := compile(opts.src, opts.arch, binary); err != nil {
		return err
	}
	img, err := assemble(binary, opts.caCerts, opts.arch)
	if err != nil {
		return err
	}
	if err := write(img, opts.out, opts.tag); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s, linux/%s)\n", opts.out, digest, opts.arch)
	return nil
}

// sourceRoot is the nearest directory, from dir upwards, whose go.mod is
// the product module's.
func sourceRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modulePath(data) == productModule {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod of %s in %s or above it: name the source tree with -src", productModule, dir)
		}
	}
}

// modulePath is the path a go.mod's module directive names.
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if fields := strings.Fields(line); len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`)
		}
	}
	return ""
}
