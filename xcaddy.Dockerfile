# Caddy with caddy-a2a, built the way plugin users build it: xcaddy, with the
# module taken from this source tree. From the repository root:
#
#	docker build -f xcaddy.Dockerfile -t caddy-a2a .
#	docker run --rm -p 8080:8080 -e DEMO_API_KEY=... caddy-a2a
#
# The image runs Caddyfile.example from /etc/caddy, so it expects the upstream
# API on 127.0.0.1:9090: a Kubernetes sidecar next to it, or --network host.
# Mount another Caddyfile (and skills file) over /etc/caddy to change that.
# .ci/xcaddy-build runs the same build without Docker.

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
	&& /out/caddy list-modules | grep -q '^http\.handlers\.a2a$'

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/caddy /usr/bin/caddy
WORKDIR /etc/caddy
COPY Caddyfile.example Caddyfile
COPY examples/skills.yaml examples/skills.yaml
# nonroot (uid 65532) owns its home, where Caddy keeps its data and config.
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/bin/caddy"]
CMD ["run", "--config", "/etc/caddy/Caddyfile", "--adapter", "caddyfile"]
