# mkueue: both binaries in one image (the chart picks the command).
#   docker build -t ghcr.io/mkueue/mkueue:0.1.0 .
# `make image-check` verifies that the runtime stage's package list provides
# every shared library the binaries link against (image builds cannot run in
# the development sandbox).

# ---- build --------------------------------------------------------------------
FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config libmicrohttpd-dev libssl-dev libjansson-dev libyajl-dev \
      libcurl4-openssl-dev libyaml-dev zlib1g-dev libjemalloc-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY common/ common/
COPY webhook/ webhook/
COPY reconciler/ reconciler/
ARG VERSION=0.1.0
RUN make -j"$(nproc)" build VERSION="$VERSION" \
 && strip bin/mkueue-webhook bin/mkueue-reconciler

# ---- runtime ------------------------------------------------------------------
FROM debian:bookworm-slim
# Runtime libraries only (libc6 is in the base image); ca-certificates for
# workers whose kubeconfig trusts the system roots.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libmicrohttpd12 libssl3 libjansson4 libyajl2 libcurl4 libyaml-0-2 zlib1g libjemalloc2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/bin/mkueue-webhook /src/bin/mkueue-reconciler /usr/local/bin/
# The chart's securityContext runs as 65532 too; no shell needed at runtime.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/mkueue-webhook"]
