#!/bin/bash
# gpu-deps.sh - packs what `make gpu-check` needs on a GPU machine whose image
# lacks libcurl/PCRE2/cJSON development files (docs/gpu.md) into the ignored
# folder .gpu-deps/: a release moeprobe built here, the shared libraries it
# links (from ldd, without glibc and the loader, which the GPU machine has),
# cJSON's header and library for refengine-cuda's build, and moeprobe.sh,
# which runs moeprobe with LD_LIBRARY_PATH set to those libraries only.
# Usage: scripts/gpu-deps.sh   (then carry .gpu-deps to the GPU machine)
set -eu
cd "$(dirname "$0")/.."
make --no-print-directory -j"$(nproc)" all >/dev/null
D=.gpu-deps
rm -rf "$D"
mkdir -p "$D/lib" "$D/include/cjson"
cp build/rel/bin/moeprobe "$D/moeprobe"
ldd build/rel/bin/moeprobe | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | ld-linux*) ;;
    *) cp -L "$lib" "$D/lib/" ;;
    esac
done
cj=$(ldconfig -p | awk '/libcjson\.so\.1 / {print $NF; exit}')
[ -n "$cj" ] && cp -L "$cj" "$D/lib/"
cp /usr/include/cjson/cJSON.h "$D/include/cjson/"
cp /usr/include/cjson/cJSON.h "$D/include/"
cat >"$D/moeprobe.sh" <<'SH'
#!/bin/sh
d=$(cd "$(dirname "$0")" && pwd)
LD_LIBRARY_PATH="$d/lib" exec "$d/moeprobe" "$@"
SH
chmod +x "$D/moeprobe.sh"
du -sh "$D" | awk '{print "gpu-deps: " $1 " in .gpu-deps/"}'
