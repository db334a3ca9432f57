# Landlord's operator image: a static binary on distroless, running as non-root.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg GOPROXY=https://proxy.example.com --build-arg VERSION=v0.2.0 \
#     --build-arg COMMIT=$(git rev-parse HEAD) -t registry.example.com/landlord:v0.2.0 .
#
# Besides its base images, the operator's build reaches nothing but the Go module proxy named by GOPROXY:
# go.sum pins every module, and the toolchain is the image's own (GOTOOLCHAIN=local). No syntax
# directive, so no Dockerfile frontend image is fetched either (BuildKit's built-in one has
# RUN --mount). The builder runs on the build machine's platform and cross-compiles for each
# target, so no emulator runs the compiler.

# The Debian release the backup target is built on (a FROM line reads only arguments declared
# before the first FROM).
ARG DEBIAN=trixie

# Build: a static binary, no cgo.
FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG GOPROXY=https://proxy.golang.org
ENV GOPROXY=$GOPROXY GOFLAGS=-mod=readonly GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH
# The release and commit the binary reports (internal/version); empty falls back to what the
# toolchain records.
ARG VERSION=""
ARG COMMIT=""
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags="-s -w -X github.com/landlord-dev/landlord/internal/version.version=${VERSION} -X github.com/landlord-dev/landlord/internal/version.commit=${COMMIT}" \
      -o /landlord ./cmd/landlord

# Backup and restore Jobs (docker buildx build --target backup ...): the same binary beside the
# database client tools it runs, from Debian 13's packages: pg_dump, pg_restore and psql of
# PostgreSQL 17, mariadb-dump and mariadb of MariaDB 11.8. pg_dump refuses a server of a newer
# major version than its own, and a Job refuses a MariaDB server newer than its client: these
# dump PostgreSQL 13 to 17 and MariaDB 10.6 to 11.8 (docs/tenant-backups.md, Supported servers;
# internal/backup's tests run both releases' clients against both releases' servers). This
# target alone reaches Debian's package mirror.
FROM debian:${DEBIAN}-slim AS backup
RUN apt-get update \
 && apt-get install -y --no-install-recommends postgresql-client mariadb-client ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /landlord /landlord
USER 65532:65532
ENTRYPOINT ["/landlord"]

# Run (the default target): distroless, non-root, nothing but the binary.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /landlord /landlord
USER 65532:65532
ENTRYPOINT ["/landlord"]
