# syntax=docker/dockerfile:1
# The worker and the starter (the order API), built from this repository, with the reconcile and paysim tools
# beside them. docker-compose.yml runs one image twice with a different command. Static binaries: the SQLite
# driver is pure Go, so no cgo.
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/ ./worker ./starter ./reconcile ./paysim

# Alpine rather than distroless: busybox wget is the starter's health check.
FROM alpine:3.21.3
RUN addgroup -S -g 10001 ordersaga && adduser -S -u 10001 -G ordersaga ordersaga
COPY --from=build /out/ /usr/local/bin/
USER ordersaga
ENV LOG_FORMAT=json
EXPOSE 8080
CMD ["starter"]
