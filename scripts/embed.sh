#!/bin/sh
# embed.sh FILE - print a C source that embeds FILE's bytes.
# data/knowledge.json becomes:
#   const unsigned char mp_data_knowledge_json[] = {...};   (NUL-terminated)
#   const size_t mp_data_knowledge_json_len;                 (without the NUL)
set -eu
f=$1
sym=mp_data_$(basename "$f" | tr -c 'A-Za-z0-9\n' '_')
echo "/* generated from $f by scripts/embed.sh; do not edit */"
echo "#include <stddef.h>"
echo "const unsigned char $sym[] = {"
od -An -v -tx1 "$f" | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g' -e 's/^/ /'
echo " 0x00 };"
echo "const size_t ${sym}_len = sizeof($sym) - 1;"
