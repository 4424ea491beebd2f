package main

import (
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// What the image holds and how it runs: xcaddy.Dockerfile's final stage,
// with what its base (gcr.io/distroless/static-debian12:nonroot) gives it.
// examples/kubernetes's tests hold the two to each other, instruction by
// instruction, and run the binary unpacked from the image's layers.
const (
	// COPY --from=build /out/caddy /usr/bin/caddy
	binaryPath = "/usr/bin/caddy"
	// Where distroless has Debian's bundle, and its SSL_CERT_FILE points.
	caCertsPath = "/etc/ssl/certs/ca-certificates.crt"
	// distroless's nonroot user and group.
	nonroot = 65532
)

// passwd and group are distroless's: root, nobody and nonroot, none with a
// shell.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group = "root:x:0:\n" +
		"nobody:x:65534:\n" +
		"nonroot:x:65532:\n"
)

// config is the image's run configuration: the base's environment, then
// the Dockerfile's ENV, WORKDIR, USER, EXPOSE, ENTRYPOINT and CMD.
func config(arch string) *v1.ConfigFile {
	return &v1.ConfigFile{
		Architecture: arch,
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		RootFS:       v1.RootFS{Type: "layers"}, // the layers' diff ids are added with them
		Config: v1.Config{
			Env: []string{
				"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"SSL_CERT_FILE=" + caCertsPath,
				"XDG_DATA_HOME=/var/lib/caddy/data",
				"XDG_CONFIG_HOME=/var/lib/caddy/config",
			},
			WorkingDir:   "/etc/caddy-a2a",
			User:         "nonroot:nonroot",
			ExposedPorts: map[string]struct{}{"8080/tcp": {}, "9180/tcp": {}},
			Entrypoint:   []string{binaryPath},
			Cmd:          []string{"run", "--config", "/etc/caddy-a2a/config/Caddyfile", "--adapter", "caddyfile"},
		},
	}
}

// baseLayer is what the base image gives that the agent uses: the users,
// the CA certificates (outgoing TLS: the upstream, JWKS, push receivers,
// Redis) and /tmp. Debian's package records, time zones and network
// databases stay out: a static Go binary reads none of them (Go's resolver
// reads /etc/hosts, then DNS, without /etc/nsswitch.conf; times are UTC).
func baseLayer(caCerts []byte) (*rootfs, error) {
	r := newRootfs()
	r.file("/etc/passwd", 0o644, []byte(passwd))
	r.file("/etc/group", 0o644, []byte(group))
	r.file(caCertsPath, 0o644, caCerts)
	r.dir("/tmp", 0o1777, 0)
	r.dir("/home/nonroot", 0o700, nonroot)
	return r, r.close()
}

// appLayer is what the Dockerfile's final stage adds: the binary, Caddy's
// state directories for the nonroot user (COPY --chown), and the mount
// points its WORKDIRs make.
func appLayer(binary []byte) (*rootfs, error) {
	r := newRootfs()
	r.file(binaryPath, 0o755, binary)
	r.dir("/var/lib/caddy", 0o755, nonroot)
	r.dir("/var/lib/caddy/data", 0o755, nonroot)
	r.dir("/var/lib/caddy/config", 0o755, nonroot)
	r.dir("/etc/caddy-a2a/config", 0o755, 0)
	r.dir("/etc/caddy-a2a/secrets", 0o755, 0)
	return r, r.close()
}
