# ticketd image: a static binary on a distroless base (no shell, no package
# manager, runs as an unprivileged user).
#
#   docker build -t ticketd --build-arg VERSION=$(git describe --always --dirty) .

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so source edits do not invalidate the module download.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=
# CGO_ENABLED=0: SQLite is pure Go here, so the binary is static and runs on
# distroless/static. -trimpath keeps build paths out of the binary.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/ticketd/ticketd/internal/buildinfo.version=${VERSION}" -o /out/ticketd ./cmd/ticketd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ticketd /usr/local/bin/ticketd
# The nonroot user's home is writable, so the default sqlite://ticketd.db
# works for a quick try; real deployments set TICKETD_DATABASE_URL.
WORKDIR /home/nonroot
USER nonroot:nonroot
# Inside a container the listener must not be loopback-only; --dev refuses
# this address on purpose (it is for a developer's machine).
ENV TICKETD_ADDR=0.0.0.0:8080 \
    TICKETD_LOG_FORMAT=json
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/ticketd"]
CMD ["serve"]
