# Image for `velero plugin add`: an init container that copies the plugin into /target.
# Build for several platforms with: docker buildx build --platform linux/amd64,linux/arm64 .
# The Go toolchain pinned to its patch release, as Velero pins it: the same source builds the same binary.
FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
ARG TARGETOS
ARG TARGETARCH
# The plugin's version and commit, printed by `velero-plugin-for-aws-async version` and `check`:
# --build-arg VERSION=$(git describe --tags --always --dirty) --build-arg COMMIT=$(git rev-parse HEAD)
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags="-s -w -X github.com/velero-async/velero-plugin-for-aws/internal/version.Version=${VERSION} -X github.com/velero-async/velero-plugin-for-aws/internal/version.Commit=${COMMIT}" \
      -o /out/plugins/velero-plugin-for-aws-async . && \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath -ldflags="-s -w" \
      -o /out/bin/cp-plugin ./internal/cmd/cp-plugin

FROM scratch
COPY --from=build /out/ /
USER 65532:65532
ENTRYPOINT ["/bin/cp-plugin", "/plugins/velero-plugin-for-aws-async", "/target"]
