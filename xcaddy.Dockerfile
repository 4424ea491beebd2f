# Caddy with caddy-a2a, built the way plugin users build it: xcaddy, with the
# module taken from this source tree; a small non-root image (distroless,
# static binary) that runs the user's files. From the repository root:
#
#	docker build -f xcaddy.Dockerfile -t caddy-a2a .
#	docker run --rm -p 8080:8080 -p 9180:9180 \
#		-v "$PWD/my-agent:/etc/caddy-a2a/config:ro" -e LEGACY_API_KEY=... caddy-a2a
#
# The default command runs /etc/caddy-a2a/config/Caddyfile; the working
# directory is /etc/caddy-a2a, so the Caddyfile names its skills file
# config/skills.yaml and secrets mounted at /etc/caddy-a2a/secrets as
# secrets/<file>. Caddy keeps its state (generated keys, certificates) under
# /var/lib/caddy: mount a volume there with a read-only root filesystem.
# docs/deploy.md has the details, examples/kubernetes the manifests.
# .ci/xcaddy-build runs the same xcaddy build without Docker, and
# examples/kubernetes's tests check that this file and the manifests agree.

FROM golang:1.26 AS build
RUN go install github.com/caddyserver/xcaddy/cmd/xcaddy@v0.4.7
WORKDIR /src
# The module's dependencies first, so that a source change reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# A static binary for the distroless image; Caddy pinned to the version the
# module is built and tested against (its go.mod).
ENV CGO_ENABLED=0
RUN xcaddy build "$(go list -m -f '{{.Version}}' github.com/caddyserver/caddy/v2)" \
		--output /out/caddy \
		--with github.com/caddy-a2a/caddy-a2a@v0.0.0=/src \
	&& /out/caddy list-modules | grep -q '^http\.handlers\.a2a$' \
	&& /out/caddy list-modules | grep -q '^http\.handlers\.a2a_health$' \
	&& mkdir -p /out/state/data /out/state/config

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/caddy /usr/bin/caddy
COPY --from=build --chown=65532:65532 /out/state /var/lib/caddy
ENV XDG_DATA_HOME=/var/lib/caddy/data XDG_CONFIG_HOME=/var/lib/caddy/config
# Mount points for the user's files: config/ (Caddyfile, skills) and secrets/.
WORKDIR /etc/caddy-a2a/config
WORKDIR /etc/caddy-a2a/secrets
WORKDIR /etc/caddy-a2a
# nonroot: uid and gid 65532.
USER nonroot:nonroot
# The A2A endpoint and the probes (a2a_health), as the example config has them.
EXPOSE 8080 9180
ENTRYPOINT ["/usr/bin/caddy"]
CMD ["run", "--config", "/etc/caddy-a2a/config/Caddyfile", "--adapter", "caddyfile"]
