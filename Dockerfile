# Build: a static binary, no cgo.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY api/ api/
COPY cmd/ cmd/
COPY internal/ internal/
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /landlord ./cmd/landlord

# Run: distroless, non-root, nothing but the binary.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /landlord /landlord
USER 65532:65532
ENTRYPOINT ["/landlord"]
