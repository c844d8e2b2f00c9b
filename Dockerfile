# syntax=docker/dockerfile:1
#
# mini-VNFM server image. The container needs an external PostgreSQL:
# set DATABASE_URL and VNFM_SECRET_KEY (see docker-compose.yml). The embedded
# PostgreSQL of `vnfm serve` is not available here (no server binaries).
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t mini-vnfm .

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/vnfm ./cmd/vnfm

# Debian slim rather than distroless: CA certificates for HTTPS to the VIM,
# and curl for the health check.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 vnfm \
 && useradd --system --uid 10001 --gid vnfm --home-dir /var/lib/vnfm --create-home --shell /usr/sbin/nologin vnfm
COPY --from=build /out/vnfm /usr/local/bin/vnfm
USER 10001:10001
WORKDIR /var/lib/vnfm
ENV VNFM_LISTEN=0.0.0.0:9890 \
    VNFM_DATA_DIR=/var/lib/vnfm
EXPOSE 9890
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
    CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:9890/healthz"]
ENTRYPOINT ["/usr/local/bin/vnfm"]
CMD ["serve"]
