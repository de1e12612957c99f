#!/usr/bin/env bash
# The ONNX C++ library the importer links (checker, shape inference, version
# converter, the opset schemas): built from the PyPI source distribution of
# the same onnx version as python/requirements.lock pins, so the importer,
# the model scripts and the conformance data agree on every opset. Debian's
# libonnx (1.12) knows opsets up to 17 only. Installed into
# .deps/onnx-VERSION/install (ignored by git) and kept: about 2 minutes on
# 2 cores the first time. Needs the venv (scripts/venv.sh) for its cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=1.23.2
SHA256=008cb0467b2bbee41448acc7da8b6f4e704624cb0d327a2d5adafc7ce19bc5b8
DEST=.deps/onnx-$VERSION
[[ -f $DEST/install/.tcc-done ]] && exit 0
grep -qx "onnx==$VERSION" python/requirements.lock || {
  echo "onnx-lib: python/requirements.lock does not pin onnx==$VERSION" >&2
  exit 1
}
echo "tcc: building the ONNX $VERSION C++ library into $DEST"
start=$SECONDS
rm -rf "$DEST"
mkdir -p "$DEST"
tarball=$DEST/onnx-$VERSION.tar.gz
# The sdist's address from the package index's simple page (PEP 503; pip
# download would build its metadata, which needs ONNX's whole Python build).
python3 - "$VERSION" "$tarball" <<'PY'
import os, re, sys, urllib.request
version, out = sys.argv[1], sys.argv[2]
index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")
with urllib.request.urlopen(index + "/onnx/", timeout=60) as r:
    page = r.read().decode()
name = re.escape("onnx-%s.tar.gz" % version)
urls = re.findall(r'href="([^"#]*/%s)(?:#[^"]*)?"' % name, page)
if not urls:
    sys.exit("onnx-lib: %s/onnx/ lists no onnx-%s.tar.gz" % (index, version))
urllib.request.urlretrieve(urllib.request.urljoin(index + "/onnx/", urls[0]), out)
PY
echo "$SHA256  $tarball" | sha256sum -c --quiet - || {
  echo "onnx-lib: $tarball does not have the pinned SHA-256" >&2
  exit 1
}
tar xzf "$tarball" -C "$DEST"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
.venv/bin/cmake -G Ninja -S "$DEST/onnx-$VERSION" -B "$DEST/build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PWD/$DEST/install" \
  -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DONNX_USE_PROTOBUF_SHARED_LIBS=ON \
  -DBUILD_ONNX_PYTHON=OFF -DONNX_BUILD_TESTS=OFF -DONNX_GEN_PB_TYPE_STUBS=OFF \
  -DONNX_ML=ON -DONNX_NAMESPACE=onnx "${launcher[@]}" >"$DEST/configure.log"
ninja -C "$DEST/build" -j "${TCC_JOBS:-2}" onnx onnx_proto >"$DEST/build.log"
.venv/bin/cmake --install "$DEST/build" >/dev/null
touch "$DEST/install/.tcc-done"
echo "tcc: ONNX $VERSION built in $((SECONDS - start)) s"
