#!/usr/bin/env bash
# Validates the checked-in data against the JSON Schemas of schema/ (tests/schema/validate.mjs
# says what is checked), with the ajv that tests/contract/npm-ci.sh installs into the build tree.
# Usage: validate.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
modules=$build/contract/npm/node_modules
[[ -d $modules/ajv ]] || { echo "ajv missing: run tests/contract/npm-ci.sh $build/contract/npm"; exit 1; }
NODE_PATH=$modules node "$(dirname "$0")/validate.mjs" "$src"
