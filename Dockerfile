# ticketd image for a machine whose builder reaches Docker Hub: the binary is
# built in golang:1.26, the image is the one `make image` builds here with
# podman (deploy/image/Containerfile) — FROM scratch, a static binary, the CA
# bundle, UID/GID 65532 named ticketd, /data its writable working directory.
# On a machine that reaches no container registry use `make image` instead.
#
#   docker build -t ticketd --build-arg VERSION=$(git describe --always --dirty) .

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so source edits do not invalidate the module download.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=
# CGO_ENABLED=0: SQLite is pure Go here, so the binary is static and runs
# FROM scratch. -trimpath keeps build paths out of the binary.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/ticketd/ticketd/internal/buildinfo.version=${VERSION}" -o /rootfs/usr/local/bin/ticketd ./cmd/ticketd
# The same rootfs scripts/image.sh lays out.
RUN mkdir -p /rootfs/etc/ssl/certs /rootfs/tmp /data && chmod 1777 /rootfs/tmp && \
    cp /etc/ssl/certs/ca-certificates.crt /rootfs/etc/ssl/certs/ && \
    echo 'ticketd:x:65532:65532:ticketd:/data:/sbin/nologin' >/rootfs/etc/passwd && \
    echo 'ticketd:x:65532:' >/rootfs/etc/group

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /data/ /data/
USER 65532:65532
# The default sqlite://ticketd.db and --dev's .ticketd/ land in /data (mount a
# volume there to keep them); real deployments set TICKETD_DATABASE_URL.
WORKDIR /data
# Inside a container the listener must not be loopback-only; --dev refuses
# this address on purpose (it is for a developer's machine).
ENV HOME=/data \
    TICKETD_ADDR=0.0.0.0:8080 \
    TICKETD_LOG_FORMAT=json
EXPOSE 8080
# The MCP Registry checks that an OCI package's image carries the server's
# name (server.json's "name") in this label.
LABEL io.modelcontextprotocol.server.name="io.github.ticketd/ticketd"
ENTRYPOINT ["/usr/local/bin/ticketd"]
CMD ["serve"]
