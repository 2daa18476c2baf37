# syntax=docker/dockerfile:1
#
# The Better Compute control plane as a container image
# (docs/operations/deploy.md). Needs BuildKit (the default builder of
# Docker 23 and later):
#
#   make docker                     # = docker build --build-arg VERSION=… --build-arg COMMIT=… -t compute:<version> .
#   docker run -e DATABASE_URL=postgres://… -p 8080:8080 -p 8081:8081 compute:<version>
#
# The default image (stage `serve`) runs `compute serve` as a non-root user
# on a distroless base. It holds no PostgreSQL: set DATABASE_URL. Without it
# `compute serve` would start a private PostgreSQL from initdb and pg_ctl,
# which this image does not have.
#
# Stage `agent` (docker build --target agent) is the node daemon on Debian
# slim, for trying it out with --fake-gpus or on a host with the NVIDIA
# Container Toolkit (which brings the host's nvidia-smi and driver in). It
# has no runc, so its daemon isolates no workloads: it refuses them unless
# started with --workload-isolation=none (docs/operations/deploy.md). A GPU
# node that serves tenants runs packaging/systemd/compute-agent.service.

ARG GO_IMAGE=golang:1.26

# build: a static binary (CGO_ENABLED=0) with reproducible paths (-trimpath)
# and the version and commit linked in (cmd/compute/version.go).
FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.commit=$COMMIT" \
      -o /out/compute ./cmd/compute

# agent: the node daemon. Workloads run under `sh`, so not distroless.
FROM debian:bookworm-slim AS agent
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/compute /usr/local/bin/compute
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility
VOLUME /var/lib/compute-agent
WORKDIR /var/lib/compute-agent
# Root, as on a node (where the daemon needs it for runc).
USER 0:0
ENTRYPOINT ["/usr/local/bin/compute", "agent", \
            "--state-dir=/var/lib/compute-agent/state", \
            "--workload-dir=/var/lib/compute-agent/workloads"]

# serve: the control plane, the default image (the last stage).
FROM gcr.io/distroless/static-debian12:nonroot AS serve
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="compute" \
      org.opencontainers.image.description="Better Compute control plane: compute serve (set DATABASE_URL)" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$COMMIT"
COPY --from=build /out/compute /usr/local/bin/compute
WORKDIR /home/nonroot
USER 65532:65532
# 8080: the API, /healthz, /readyz, /metrics, the console; 8081: the node
# daemons' gateway.
EXPOSE 8080 8081
ENTRYPOINT ["/usr/local/bin/compute"]
CMD ["serve"]
