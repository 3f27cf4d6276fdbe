# syntax=docker/dockerfile:1
#
# One image with both binaries; the command picks one:
#   docker build -t fleetgate:0.1.0 .
#   docker run --rm fleetgate:0.1.0 controller --config /etc/fleetgate/fleet.yaml ...
#   docker run --rm fleetgate:0.1.0 edge --nats-url nats://nats:4222 ...
# The Helm chart (deploy/helm/fleetgate) sets the command of each container.

ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static-debian12:nonroot

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Static binaries: no cgo, no paths of the build machine in them.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -buildid=" -o /out/ ./cmd/controller ./cmd/edge

FROM ${BASE_IMAGE}
COPY --from=build /out/controller /out/edge /usr/local/bin/
# `docker run IMAGE controller ...` finds the binary on PATH.
ENV PATH=/usr/local/bin:/usr/bin:/bin
# distroless "nonroot": uid and gid 65532, no shell, no package manager.
USER 65532:65532
# The edge's MCP and admin ports, the controller's admin port.
EXPOSE 8080 8082 8081
