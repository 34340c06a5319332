#!/usr/bin/env bash
# Pack hlobridge's binary dependencies for a machine that has Python but no package index (a
# GPU machine lent for a benchmark), small enough to travel with the repository: IREE's compiler
# wheel alone is 84 MB, and most of it is one unstripped library.
#
#     tools/pack_offline_iree.sh OUT [PYTHON_VERSION]      # OUT: a folder git ignores; default 3.12
#
# OUT gets lib.so.xz (libIREECompiler.so stripped and xz-compressed with the x86 filter:
# 43 MB against 336 MB), rest.tar.xz (the other files of iree-base-compiler, iree-base-runtime
# without its Tracy build, google-crc32c and protobuf: 4 MB) and setup.sh. On the other machine,
# from the repository's root:
#
#     source OUT/setup.sh      # unpacks into /tmp/hlobridge-site, installs hlobridge (editable)
#
# numpy and ml-dtypes are expected there already. Packing takes a few minutes (xz -9e).
set -euo pipefail
out=${1:?usage: tools/pack_offline_iree.sh OUT [PYTHON_VERSION]}
py=${2:-3.12}
root=$(cd "$(dirname "$0")/.." && pwd)
# the versions this checkout's venv runs (README: `.venv`), so both machines compile alike
versions=$("$root/.venv/bin/python" -c "
import importlib.metadata as m
print(' '.join(f'{n}=={m.version(n)}' for n in ('iree-base-compiler', 'iree-base-runtime', 'google-crc32c', 'protobuf')))")
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$work/wheels" $versions
mkdir "$work/site"
for w in "$work"/wheels/*.whl; do (cd "$work/site" && python3 -m zipfile -e "$w" .); done
lib=iree/compiler/_mlir_libs/libIREECompiler.so
strip -s -R .comment "$work/site/$lib"
xz -T1 --x86 --lzma2=preset=9e,dict=256MiB -c "$work/site/$lib" > "$out/lib.so.xz"
rm -rf "$work/site/$lib" "$work/site/iree/_runtime_libs_tracy"
chmod -R u+rwX,go+rX "$work/site"
tar -C "$work/site" -cJf "$out/rest.tar.xz" .
cat > "$out/setup.sh" <<'EOF'
# source this from the repository's root: IREE and hlobridge for this machine's python3
here=$(dirname "${BASH_SOURCE[0]}")
site=/tmp/hlobridge-site
if [ ! -f $site/iree/compiler/_mlir_libs/libIREECompiler.so ]; then
  mkdir -p $site && tar -C $site -xJf "$here/rest.tar.xz" &&
    xz -dc "$here/lib.so.xz" > $site/iree/compiler/_mlir_libs/libIREECompiler.so &&
    chmod +x $site/iree/compiler/_mlir_libs/* $site/iree/_runtime_libs/iree-*
fi
export PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH}
python3 -m pip install -q --no-deps --no-build-isolation --no-index -e . >/tmp/hlobridge-pip.log 2>&1 ||
  { cat /tmp/hlobridge-pip.log; return 1; }
EOF
ls -l "$out"
